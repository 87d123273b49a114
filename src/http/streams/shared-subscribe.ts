import { createSourceEventStream, execute, type DocumentNode, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { Principal } from '../../schema/principal.js';

type SubscribeResult = AsyncIterableIterator<ExecutionResult> | ExecutionResult;

/**
 * The SSE id of a result whose source event carries one (`eventId`, e.g. a feed event): the writer
 * sends it as the event's `id`, which a reconnecting client sends back as Last-Event-ID.
 */
export const resultEventIds = new WeakMap<object, string>();

const withEventId = (payload: unknown) => (result: ExecutionResult) => {
  const eventId = (payload as { eventId?: unknown } | null)?.eventId;
  if (typeof eventId === 'string') resultEventIds.set(result, eventId);
  return result;
};

/**
 * Streams' execution: GraphQL's subscribe, except that a source event shared by several streams is
 * executed once per way of reading it (document, variables, user, scopes), and the writer encodes
 * that one result once. A result with errors is never shared.
 */
export function createSharedSubscribe() {
  const results = new WeakMap<object, Map<string, Promise<ExecutionResult>>>();
  const documentIds = new WeakMap<DocumentNode, number>();
  let documents = 0;

  const readingOf = (args: ExecutionArgs): string | null => {
    const principal = (args.contextValue as { principal?: Principal } | undefined)?.principal;
    if (principal?.type !== 'user') return null;
    let documentId = documentIds.get(args.document);
    if (documentId === undefined) documentIds.set(args.document, (documentId = documents++));
    const scopes = [...principal.scopes].sort().join(',');
    return JSON.stringify([documentId, args.operationName ?? null, args.variableValues ?? {}, principal.userId, scopes]);
  };

  const resultFor = (args: ExecutionArgs, reading: string | null, payload: unknown): Promise<ExecutionResult> => {
    const run = async () => withEventId(payload)(await execute({ ...args, rootValue: payload }));
    if (reading === null || typeof payload !== 'object' || payload === null) return run();
    let byReading = results.get(payload);
    if (!byReading) results.set(payload, (byReading = new Map()));
    let result = byReading.get(reading);
    if (!result) {
      const shared = byReading;
      result = run().then((value) => {
        if (value.errors?.length) shared.delete(reading);
        return value;
      });
      byReading.set(reading, result);
    }
    return result;
  };

  return async function subscribe(args: ExecutionArgs): Promise<SubscribeResult> {
    const source = await createSourceEventStream(args);
    if (!(Symbol.asyncIterator in source)) return source;
    const events = source[Symbol.asyncIterator]();
    const reading = readingOf(args);
    const mapped: AsyncIterableIterator<ExecutionResult> = {
      async next() {
        const item = await events.next();
        return item.done ? { done: true, value: undefined } : { done: false, value: await resultFor(args, reading, item.value) };
      },
      async return() {
        await events.return?.();
        return { done: true, value: undefined };
      },
      async throw(error: unknown) {
        await events.return?.();
        throw error;
      },
      [Symbol.asyncIterator]() {
        return mapped;
      },
    };
    return mapped;
  };
}

/** One per process: `/graphql` and the REST routes share it. */
export const sharedSubscribe = createSharedSubscribe();
