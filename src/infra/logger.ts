import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type DestinationStream, type Logger } from 'pino';

/** The request being served, carried through every await so that any log line can name it. */
export const requestScope = new AsyncLocalStorage<{ requestId: string }>();

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
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', '*.apiKey', 'apiKey', 'secret', '*.secret'], censor: '[redacted]' },
    },
    destination,
  );
}
