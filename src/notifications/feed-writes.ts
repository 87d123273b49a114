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
 * The queue in which every write of a user's existing rows (a mark by id, a mark of everything;
 * an archive or a restore, when they come, the same way: `placeInQueue`, then `inTurn`) waits for
 * the user's earlier writes on this instance to finish.
 * Those writes run one at a time per user anyway (the user's advisory lock in their statement),
 * but a statement waiting for that lock holds a pooled connection: a user sending many at once
 * would hold the whole pool while they wait, and every other user would wait for it. Here they
 * wait in memory, holding nothing, so a user's writes use at most one connection of the instance;
 * the advisory lock still orders them across instances. At most `maxWaiting` wait per user; the
 * next is refused with `concurrency_limit`.
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

/**
 * Runs `write` in the writer's turn, then gives the turn to the next. A caller that left while it
 * waited has given up its place and writes nothing; one that leaves while its write runs lets it
 * finish (a statement is never cut short: the rows and counters stay as it left them).
 */
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
