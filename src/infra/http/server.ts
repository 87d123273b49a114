import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Services } from '../../services.js';
import { ApiError } from './api-error.js';
import { containsNul } from '../../common/nul.js';
import { requestScope } from '../logger.js';

export const BODY_LIMIT_BYTES = 64 * 1024;
/** `/graphql` carries internal tools' batch mutations (up to 1000 records), so it allows more. */
export const GRAPHQL_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The HTTP host: Fastify with JSON logs, a request id on every response, and one error handler
 * that answers the contract's `{"error": {code, message}}` (never a stack, never a 500 for bad input).
 */
export function createHttpServer(services: Services): FastifyInstance {
  const app = Fastify({
    loggerInstance: services.log as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: services.config.trustProxy,
    // A caller's X-Request-Id is kept when it is a plain token, so their logs and ours line up.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    // Requests Node's HTTP parser refuses (bad bytes in a header, oversized request line or
    // headers) still get the contract's error body.
    clientErrorHandler: (error, socket) => {
      if (!socket.writable || (error as NodeJS.ErrnoException).code === 'ECONNRESET') return socket.destroy();
      const tooLarge = (error as NodeJS.ErrnoException).code === 'HPE_HEADER_OVERFLOW';
      const requestId = randomUUID();
      const apiError = tooLarge ? new ApiError('payload_too_large', 'The request line or headers are too large.') : new ApiError('invalid_request', 'The HTTP request is malformed.');
      const body = JSON.stringify(apiError.toBody(requestId));
      socket.end(
        `HTTP/1.1 ${apiError.status} ${tooLarge ? 'Payload Too Large' : 'Unprocessable Entity'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
  });

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    // Everything this request awaits from here on runs in its scope (see infra/logger.ts).
    requestScope.run({ requestId: request.id }, done);
  });

  // REST bodies are parsed as JSON whatever the Content-Type, so a wrong header is a 422 like any other bad body.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(new ApiError('invalid_request', 'The body is not valid JSON.'), undefined);
    }
    // PostgreSQL text cannot hold U+0000, so such strings are refused here rather than failing a query.
    if (/\\u0000/i.test(text) && containsNul(parsed)) return done(new ApiError('invalid_request', 'Strings must not contain U+0000.'), undefined);
    done(null, parsed);
  });

  app.setNotFoundHandler((request, reply) => {
    const error = new ApiError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`);
    return reply.status(error.status).send(error.toBody(request.id));
  });

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    let apiError: ApiError;
    if (error instanceof ApiError) apiError = error;
    else if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') apiError = new ApiError('payload_too_large', 'The body is too large (64 KiB on the REST routes).');
    else if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) apiError = new ApiError('invalid_request', 'The request could not be read.');
    else {
      request.log.error({ err: error }, 'unexpected error');
      apiError = new ApiError('internal_error', 'Unexpected error; retry.');
    }
    request.errorCode = apiError.code;
    for (const [name, value] of Object.entries(apiError.headers)) reply.header(name, value);
    return reply.status(apiError.status).send(apiError.toBody(request.id));
  });

  return app;
}


/** Answers 405 `method_not_allowed` for the other methods of a known path. */
export function allowOnly(app: FastifyInstance, url: string, allowed: string[]) {
  const methods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => !allowed.includes(m) && !(m === 'HEAD' && allowed.includes('GET')));
  app.route({
    url,
    method: methods,
    handler: async (_request, reply) => {
      const error = new ApiError('method_not_allowed', `Use ${allowed.join(' or ')} on ${url}.`);
      return reply.status(error.status).header('Allow', allowed.join(', ')).send(error.toBody(_request.id));
    },
  });
}
