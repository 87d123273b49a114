import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type DestinationStream, type Logger } from 'pino';

/** The request being served, carried through every await so that any log line can name it. */
export const requestScope = new AsyncLocalStorage<{ requestId: string }>();

/**
 * A URL as it may be logged: query values replaced, since a caller may put a secret there
 * (`?access_token=…`) even though no credential is ever read from it.
 */
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

/**
 * JSON lines (pino). Every line written while serving a request carries its `reqId`, also lines
 * from code that holds the process-wide logger (the trace coordinator, providers, Redis).
 * Authorization headers never reach a log line: requests are logged as method, url and ids only.
 */
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
