import { skipTraceAccount } from '../../billing/skip-trace-account.js';
import { AppError } from '../../common/errors.js';

/**
 * The charges of one list's items, in index order, whatever order their traces finish in: an
 * item charges only once every item before it has settled (charged or failed), and once one found
 * no credit left, every later item fails `insufficient_credits` without trying. So when the
 * balance covers fewer items than remain, the lower indexes are the ones served.
 */
export interface ChargeOrder {
  /** Resolves when it is item `index`'s turn to charge; throws `insufficient_credits` once the credits ran out. */
  turn(index: number): Promise<void>;
  /** Item `index` is over (charged, or failed with `error`): the next may charge. Call it exactly once per item. */
  settle(index: number, error?: unknown): void;
}

export function chargeInIndexOrder(count: number): ChargeOrder {
  const settle: Array<() => void> = [];
  const own = Array.from({ length: count }, (_, index) => new Promise<void>((resolve) => (settle[index] = resolve)));
  // settledThrough[i]: every item 0..i has settled.
  const settledThrough: Promise<void>[] = [];
  own.forEach((item, index) => settledThrough.push(index === 0 ? item : item.then(() => settledThrough[index - 1])));
  let exhausted = false;
  return {
    async turn(index) {
      if (index > 0) await settledThrough[index - 1];
      if (exhausted) throw skipTraceAccount.noCreditsLeft();
    },
    settle(index, error) {
      if (error instanceof AppError && error.kind === 'insufficient_credits') exhausted = true;
      settle[index]();
    },
  };
}
