import { Gauge, type Registry } from 'prom-client';
import { AppError } from '../common/errors.js';
import type { ClientWatch } from '../infra/client-watch.js';
import { concurrencyRefusals } from '../infra/in-flight.js';
import { createPerKeyQueue, type PerKeyQueue, type QueuePlace, type ReleaseTurn } from '../infra/per-key-queue.js';

declare module '../schema/context.js' {
  interface Services {
    /** Each user's writes of existing feed rows, taken in turn per user on this instance (`FeedWrites`). */
    feedWrites: FeedWrites;
  }
}

/**
 * Each user's writes wait their turn here, in memory, rather than holding a pooled connection
 * while they wait for the user's advisory lock: one user cannot take the whole pool. At most
 * `maxWaiting` wait per user; the next is refused with `concurrency_limit`.
 */
export interface FeedWrites {
  queue: PerKeyQueue;
  /** Counts a refusal. */
  refused(): void;
}

export function createFeedWrites(config: { marksMaxInFlightPerUser: number }, registry: Registry): FeedWrites {
  const queue = createPerKeyQueue(config.marksMaxInFlightPerUser);
  new Gauge({
    name: 'crm_feed_writes_waiting',
    help: "Marks waiting for their turn behind the same user's earlier marks on this instance.",
    registers: [registry],
    collect() {
      this.set(queue.waiting);
    },
  });
  return { queue, refused: concurrencyRefusals(registry, 'marks_per_user') };
}

/** Who writes: the user whose rows change, with the request (a caller that leaves gives up its place) and the instance's queue. */
export interface FeedWriter {
  userId: string;
  client: ClientWatch;
  writes: FeedWrites;
}

/** The writer's place in its user's queue; `concurrency_limit` when the queue is full. */
export function placeInQueue(writer: FeedWriter): QueuePlace {
  const place = writer.writes.queue.enter(writer.userId, writer.client.signal);
  if (place) return place;
  writer.writes.refused();
  throw new AppError(
    'concurrency_limit',
    `More than ${writer.writes.queue.maxWaiting} marks of this user are waiting on this instance; retry when one completes.`,
  );
}

const callerGone = () => new AppError('internal_error', 'The caller closed the connection before its turn came.');

/** Runs `write` in the writer's turn; a caller that left while waiting writes nothing, a started write is never cut short. */
export async function inTurn<T>(writer: FeedWriter, place: QueuePlace, write: () => Promise<T>): Promise<T> {
  let release: ReleaseTurn;
  try {
    release = await place.turn;
  } catch {
    throw callerGone();
  }
  try {
    if (writer.client.signal.aborted) throw callerGone();
    return await write();
  } finally {
    release();
  }
}
