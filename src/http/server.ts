import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { AppError, MASKED_MESSAGE } from '../common/errors.js';
import { watchClient, type ClientWatch } from '../infra/client-watch.js';
import { containsNul, NUL_MESSAGE } from '../common/nul.js';
import { lazyChildLogger, requestScope } from '../infra/logger.js';
import type { Config } from '../infra/config.js';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';
import type { IncomingMessage } from 'node:http';

declare module 'fastify' {
  interface FastifyRequest {
    client: ClientWatch;
  }
}

export const BODY_LIMIT_BYTES = 64 * 1024;
/** `/graphql` carries internal tools' batch mutations (up to 1000 records), so it allows more. */
export const GRAPHQL_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** How often Node checks connections for the header and body timeouts: their resolution. */
const TIMEOUT_CHECK_INTERVAL_MS = 250;
/** Set on a socket while it carries a request, so a timeout answered on the raw socket names it. */
const kRequestId = Symbol('requestId');
/** The reply of the request being read on a socket, for an answer written on the socket itself (408). */
const kReply = Symbol('reply');

const JSON_MEDIA_TYPE = /^application\/json[ \t]*(;|$)/i;

/** A body of another media type a route accepts (e.g. `text/csv`), handed to it as UTF-8 text. */
export class TextBody {
  constructor(
    readonly mediaType: string,
    readonly text: string,
  ) {}

  /** Compared by content, as JSON bodies are (an Idempotency-Key's fingerprint). */
  toJSON() {
    return { mediaType: this.mediaType, text: this.text };
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Media types the route accepts besides `application/json`, read as text (TextBody). */
    textBodies?: readonly string[];
  }
}

/** The route's text media type that `contentType` names (parameters such as `charset=utf-8` allowed), if any. */
const textMediaType = (request: FastifyRequest, contentType: string) => {
  const mediaType = contentType.split(';')[0].trim().toLowerCase();
  return request.routeOptions.config?.textBodies?.find((type) => type === mediaType);
};

/** The contract's error body written straight to a socket, for errors raised before any route runs. */
function answerOnSocket(socket: Socket, appError: AppError, requestId: string, headers: Record<string, string> = {}) {
  const body = JSON.stringify(appError.toBody(requestId));
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${appError.status} ${appError.kind}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
}

/** The rate-limit headers the request being read on `socket` was given (its window was spent before its body arrived). */
function rateLimitHeadersOf(socket: Socket): Record<string, string> {
  const headers = (socket as Socket & { [kReply]?: FastifyReply })[kReply]?.getHeaders() ?? {};
  return Object.fromEntries(
    Object.entries(headers)
      .filter(([name, value]) => /^x-ratelimit-/i.test(name) && value !== undefined)
      .map(([name, value]) => [name, String(value)]),
  );
}

export function sendError(request: FastifyRequest, reply: FastifyReply, appError: AppError) {
  request.errorCode = appError.kind;
  for (const [name, value] of Object.entries(appError.headers)) reply.header(name, value);
  return reply.header('X-Request-Id', request.id).status(appError.status).send(appError.toBody(request.id));
}

/** Answers what Node's HTTP parser refuses (bad bytes in a header, oversized request line or headers) or ends (the body timeout) with the contract's error body. */
function clientErrorHandler(bodyTimeoutMs: number) {
  return (error: Error, socket: Socket) => {
    const code = (error as NodeJS.ErrnoException).code;
    // A response already under way (a 429 answered before its body arrived) cannot get another.
    const answered = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (!socket.writable || code === 'ECONNRESET' || answered) return socket.destroy();
    const requestId = (socket as Socket & { [kRequestId]?: string })[kRequestId] ?? randomUUID();
    if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      return answerOnSocket(
        socket,
        new AppError('request_timeout', `The request did not arrive in full within ${bodyTimeoutMs} ms.`),
        requestId,
        rateLimitHeadersOf(socket),
      );
    }
    const tooLarge = code === 'HPE_HEADER_OVERFLOW';
    answerOnSocket(
      socket,
      tooLarge
        ? new AppError('payload_too_large', 'The request line or headers are too large.')
        : new AppError('invalid_request', 'The HTTP request is malformed.'),
      requestId,
    );
  };
}

/** Fastify's options: each request's logger is made only when a line is written. */
function serverOptions(config: Config, log: Logger) {
  const bodyTimeoutMs = config.limits.requestBodyTimeoutMs;
  return {
    loggerInstance: log as FastifyBaseLogger,
    childLoggerFactory: (logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) =>
      lazyChildLogger(logger as Logger, bindings, options) as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: config.trustProxy,
    // A caller's X-Request-Id is kept when it is a plain token, so their logs and ours line up.
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    // Headers and body within the body timeout (else 408); idle keep-alive stays longer than common
    // load balancers' idle timeouts, so it never races them.
    requestTimeout: bodyTimeoutMs,
    http: { requestTimeout: bodyTimeoutMs, headersTimeout: bodyTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS },
    // URLs the router cannot decode, or whose segments are over-long, are no route of ours.
    frameworkErrors: (_error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const path = request.raw.url?.split('?')[0] ?? '';
      return sendError(
        request,
        reply,
        new AppError('not_found', `No route ${request.method} ${path.length > 200 ? `${path.slice(0, 200)}…` : path}.`),
      );
    },
    clientErrorHandler: clientErrorHandler(bodyTimeoutMs),
  };
}

/** Every request: its id on the response, the caller's connection watched, its socket named for a 408, its log scope. */
function onEachRequest(app: FastifyInstance) {
  app.decorateRequest('client', null as unknown as ClientWatch);
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    request.client = watchClient(request.raw, reply.raw);
    const socket = request.raw.socket as Socket & { [kRequestId]?: string; [kReply]?: FastifyReply };
    socket[kRequestId] = request.id;
    socket[kReply] = reply;
    reply.raw.once('finish', () => {
      if (socket[kRequestId] !== request.id) return;
      delete socket[kRequestId];
      delete socket[kReply];
    });
    // Everything this request awaits from here on runs in its scope (see infra/logger.ts).
    requestScope.run({ requestId: request.id }, done);
  });
}

/** Bodies are JSON, read within the size limit (413), media type checked (415), then parsed (422). */
function parseJsonBodies(app: FastifyInstance) {
  const parse = (request: FastifyRequest, body: Buffer, done: (error: Error | null, parsed?: unknown) => void) => {
    const contentType = request.headers['content-type'] ?? '';
    if (!JSON_MEDIA_TYPE.test(contentType)) {
      const textType = textMediaType(request, contentType);
      if (textType) return done(null, new TextBody(textType, body.toString('utf8')));
      const accepted = ['application/json', ...(request.routeOptions.config?.textBodies ?? [])].join(' or ');
      return done(new AppError('unsupported_media_type', `Send the body as ${accepted}.`), undefined);
    }
    const text = body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(new AppError('invalid_request', 'The body is not valid JSON.'), undefined);
    }
    // PostgreSQL text cannot hold U+0000, so such strings are refused here rather than failing a query.
    if (/\\u0000/i.test(text) && containsNul(parsed)) return done(new AppError('invalid_request', NUL_MESSAGE), undefined);
    done(null, parsed);
  };
  app.removeAllContentTypeParsers();
  // The same parser twice: Fastify caches its lookup for an exact media type, never for '*'.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => parse(request, body as Buffer, done));
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => parse(request, body as Buffer, done));
}

function bodyTooLarge(request: FastifyRequest): string {
  const limit = request.routeOptions.bodyLimit ?? BODY_LIMIT_BYTES;
  if (limit === BODY_LIMIT_BYTES) return 'The body is too large (64 KiB on the REST routes).';
  return `The body is too large (${Math.round(limit / 1024 / 1024)} MiB on ${request.routeOptions.url ?? 'this route'}).`;
}

/** Any error, as the contract's error body: AppErrors as they are, the host's own by kind, anything else masked. */
function answerErrors(app: FastifyInstance) {
  app.setNotFoundHandler((request, reply) => {
    const error = new AppError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`);
    return reply.status(error.status).send(error.toBody(request.id));
  });
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    let appError: AppError;
    if (error instanceof AppError) appError = error;
    else if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') appError = new AppError('payload_too_large', bodyTooLarge(request));
    // A Content-Type header the host cannot even read (empty, malformed) is no JSON either.
    else if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      appError = new AppError('unsupported_media_type', 'Send the body as application/json.');
    else if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500)
      appError = new AppError('invalid_request', 'The request could not be read.');
    else {
      request.log.error({ err: error }, 'unexpected error');
      appError = new AppError('internal_error', MASKED_MESSAGE);
    }
    return sendError(request, reply, appError);
  });
}

/** The HTTP host: one error handler answering the contract's error body (never a stack, never a 500 for bad input). */
export function createHttpServer(config: Config, log: Logger): FastifyInstance {
  const app = Fastify(serverOptions(config, log));
  onEachRequest(app);
  parseJsonBodies(app);
  answerErrors(app);
  return app;
}

export function allowOnly(app: FastifyInstance, url: string, allowed: string[]) {
  const methods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter(
    (m) => !allowed.includes(m) && !(m === 'HEAD' && allowed.includes('GET')),
  );
  app.route({
    url,
    method: methods,
    handler: async (_request, reply) => {
      const error = new AppError('method_not_allowed', `Use ${allowed.join(' or ')} on ${url}.`);
      return reply.status(error.status).header('Allow', allowed.join(', ')).send(error.toBody(_request.id));
    },
  });
}
