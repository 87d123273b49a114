import type { ExecutionResult, GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { AppError } from '../../common/errors.js';
import { acceptsEventStream, EVENT_STREAM_HEADERS, eventStream } from './event-stream.js';
import { resultEventIds, sharedSubscribe } from './shared-subscribe.js';
import { graphqlRefusal, maskError, refusalOf, type GraphqlRefusal } from '../graphql/graphql-errors.js';

const errorJson = (error: GraphQLError) => ({
  message: error.message,
  ...(error.path && { path: error.path }),
  extensions: { code: error.extensions?.code },
});

/**
 * Streams on `/graphql`: subscriptions through the writer (event-stream.ts). A refusal as one
 * opens is an HTTP error with its row's status and headers, not a 200 stream carrying the error.
 */
export function useGraphqlStreams(log: Logger): Plugin {
  const subscriptions = new WeakSet<Request>();
  // The events of a subscription that several streams read alike, encoded once for them all.
  const encoded = new WeakMap<object, Uint8Array>();
  return {
    onSubscribe({ args, setSubscribeFn }) {
      const request = (args.contextValue as { request?: Request }).request;
      if (request) subscriptions.add(request);
      setSubscribeFn(sharedSubscribe);
    },
    onResultProcess({ request, result, setResultProcessor }) {
      if (!subscriptions.has(request)) return;
      const refuse = (refusal: GraphqlRefusal, headers: Readonly<Record<string, string | number>> = {}) =>
        setResultProcessor(
          (_result, fetchAPI) =>
            new fetchAPI.Response(JSON.stringify(refusal.body), {
              status: refusal.status,
              headers: { 'Content-Type': 'application/json; charset=utf-8', ...stringValues(headers) },
            }),
          'application/json',
        );
      if (isAsyncIterable(result)) {
        const events = result[Symbol.asyncIterator]();
        if (!acceptsEventStream(request.headers.get('accept'))) {
          // Opened, but the caller cannot read a stream: close it at once and say what to send.
          void events.return?.();
          return refuse(graphqlRefusal(406, 'A subscription is a stream: send the header Accept: text/event-stream.'));
        }
        return setResultProcessor(
          (_result, fetchAPI) =>
            new fetchAPI.Response(
              eventStream(events, {
                encoded,
                id: (value) => resultEventIds.get(value),
                next: (value) => ({ data: value.data ?? null, ...(value.errors?.length && { errors: value.errors.map(errorJson) }) }),
                error: (error) => ({ errors: [errorJson(maskError(error, log))] }),
              }),
              { status: 200, headers: EVENT_STREAM_HEADERS },
            ),
          'text/event-stream',
        );
      }
      const first = (result as ExecutionResult).errors?.[0];
      if (!first) return;
      const error = AppError.from(first);
      refuse(refusalOf(error.kind, error.message), error.headers);
    },
  };
}

const stringValues = (headers: Readonly<Record<string, string | number>>) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, String(value)]));
