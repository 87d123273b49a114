import { setImmediate } from 'node:timers/promises';

/**
 * `batch` as a per-call function: the calls made before the event loop's next check phase (those
 * started together, or whose statements answered in the same poll) are answered by one `batch`
 * call, hence one statement for all of them. `batch` answers each call, in the order given; when
 * it throws, every call of the batch throws the same error.
 */
export function coalesced<Arg, Result>(batch: (args: Arg[]) => Promise<Result[]>): (arg: Arg) => Promise<Result> {
  let pending: { arg: Arg; resolve: (result: Result) => void; reject: (error: unknown) => void }[] = [];
  const flush = async () => {
    await setImmediate();
    const calls = pending;
    pending = [];
    try {
      const results = await batch(calls.map((call) => call.arg));
      calls.forEach((call, i) => call.resolve(results[i]));
    } catch (error) {
      for (const call of calls) call.reject(error);
    }
  };
  return (arg) =>
    new Promise<Result>((resolve, reject) => {
      if (pending.push({ arg, resolve, reject }) === 1) void flush();
    });
}
