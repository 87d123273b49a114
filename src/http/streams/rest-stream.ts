import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../common/errors.js';
import type { RequestContext } from '../../schema/context.js';
import { acceptsEventStream, EVENT_STREAM_HEADERS, eventStream } from './event-stream.js';
import { resultEventIds } from './shared-subscribe.js';
import { maskError } from '../graphql/graphql-errors.js';
import type { OperationSubscriber, RestOperation } from '../rest/operation.js';

/**
 * Streams on the REST routes: a subscription through the writer (event-stream.ts). A refusal as
 * it opens is an ordinary REST error; an error once it runs is a last `next` event in REST's shape.
 */

/** How a route answers a subscription: each `next` event's data made from the root field's value. */
export interface RestStream {
  event: (value: unknown) => unknown;
}

/** A subscription is only ever answered as a stream, so the caller must say it reads one (422 otherwise, naming the header). */
export function requireEventStream(request: FastifyRequest, operationName: string, stream: RestStream | undefined) {
  if (!stream) throw new AppError('invalid_request', `${operationName} is a subscription, which this route does not serve.`);
  if (!acceptsEventStream(request.headers.accept))
    throw new AppError('invalid_request', `${operationName} is a stream: send the header Accept: text/event-stream.`, [
      { path: 'Accept', message: 'must be text/event-stream' },
    ]);
}

/** Each route's encoded events, shared by its streams (see EventStreamFormat's `encoded`). */
const encodedByRoute = new WeakMap<RestStream, WeakMap<object, Uint8Array>>();

/** Opens the subscription and answers with its events; a refusal as it opens is thrown. */
export async function sendStream(
  reply: FastifyReply,
  subscribe: OperationSubscriber,
  call: { operation: RestOperation; variables: Record<string, unknown>; context: RequestContext; stream: RestStream },
) {
  const { operation, variables, context, stream } = call;
  const { events, error } = await subscribe(operation.document, variables, context);
  if (error) throw error;
  let encoded = encodedByRoute.get(stream);
  if (!encoded) encodedByRoute.set(stream, (encoded = new WeakMap()));
  const body = eventStream(events, {
    encoded,
    id: (result) => resultEventIds.get(result),
    next: (result) => {
      const failure = result.errors?.[0];
      return failure
        ? AppError.from(maskError(failure, context.log)).toBody(context.requestId)
        : stream.event(result.data?.[operation.rootField] ?? null);
    },
    error: (failure) => AppError.from(maskError(failure as Error, context.log)).toBody(context.requestId),
  });
  return reply.headers(EVENT_STREAM_HEADERS).send(body);
}
