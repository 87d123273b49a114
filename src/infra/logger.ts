import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type DestinationStream, type Logger } from 'pino';

/** Carried through every await so any log line can name its request. */
export const requestScope = new AsyncLocalStorage<{ requestId: string }>();

/** Query values are redacted: a caller may put a secret there even though no credential is read from it. */
export function urlForLog(url: string): string {
  const query = url.indexOf('?');
  if (query < 0) return url;
  const names = url
    .slice(query + 1)
    .split('&')
    .filter(Boolean)
    .map((pair) => `${pair.split('=')[0].slice(0, 64)}=[redacted]`);
  return `${url.slice(0, query)}?${names.join('&')}`;
}

/** Lines written while serving a request carry its `reqId`, even through the process-wide logger. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      mixin: (_context, _level, logger) => {
        const scope = requestScope.getStore();
        // Fastify's request loggers already bind reqId; only add it where it is missing.
        return scope && !(logger as { bindings?: () => Record<string, unknown> }).bindings?.().reqId ? { reqId: scope.requestId } : {};
      },
      serializers: {
        req: (request: { method?: string; url?: string; ip?: string; socket?: { remotePort?: number } }) => ({
          method: request.method,
          url: urlForLog(request.url ?? ''),
          remoteAddress: request.ip,
          remotePort: request.socket?.remotePort,
        }),
      },
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'authorization', '*.apiKey', 'apiKey', 'secret', '*.secret'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Bindings = Record<string, unknown>;

/** The pino child is made only when an enabled line is written: most requests write none, and a child costs CPU. */
class LazyChildLogger {
  #child: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly childBindings: Bindings,
    private readonly options: object,
  ) {}

  get real(): Logger {
    return (this.#child ??= this.parent.child(this.childBindings, this.options));
  }
  #write(level: Level, args: unknown[]) {
    if (this.#child || this.parent.isLevelEnabled(level)) (this.real[level] as (...a: unknown[]) => void)(...args);
  }
  fatal(...args: unknown[]) {
    this.#write('fatal', args);
  }
  error(...args: unknown[]) {
    this.#write('error', args);
  }
  warn(...args: unknown[]) {
    this.#write('warn', args);
  }
  info(...args: unknown[]) {
    this.#write('info', args);
  }
  debug(...args: unknown[]) {
    this.#write('debug', args);
  }
  trace(...args: unknown[]) {
    this.#write('trace', args);
  }
  silent() {}
  child(bindings: Bindings, options?: object) {
    return this.real.child(bindings, options);
  }
  bindings() {
    return this.real.bindings();
  }
  isLevelEnabled(level: string) {
    return this.#child ? this.#child.isLevelEnabled(level) : this.parent.isLevelEnabled(level);
  }
  get level() {
    return this.#child ? this.#child.level : this.parent.level;
  }
  set level(level: string) {
    this.real.level = level;
  }
}

/** For Fastify's `childLoggerFactory`. */
export function lazyChildLogger(parent: Logger, bindings: Bindings, options: { level?: string } = {}): Logger {
  if (options.level !== undefined) return parent.child(bindings, options);
  return new LazyChildLogger(parent, bindings, options) as unknown as Logger;
}
