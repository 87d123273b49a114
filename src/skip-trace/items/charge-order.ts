import { skipTraceAccount } from '../../billing/skip-trace-account.js';
import { AppError } from '../../common/errors.js';

/**
 * An item charges once every item before it settled, and none tries after one found no credit, so
 * when the balance covers fewer items than remain, the lower indexes are served.
 */
export interface ChargeOrder {
  turn(index: number): Promise<void>;
  /** Exactly once per item, or the items after it never charge. */
  settle(index: number, error?: unknown): void;
}

export function chargeInIndexOrder(count: number): ChargeOrder {
  const resolveItem: Array<() => void> = [];
  const own = Array.from({ length: count }, (_, index) => new Promise<void>((resolve) => (resolveItem[index] = resolve)));
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
      resolveItem[index]();
    },
  };
}
