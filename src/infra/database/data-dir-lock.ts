import { mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';

/** An unrefreshed lock this old was left by a dead process and is taken over. */
export const DATA_DIR_LOCK_STALE_MS = 10_000;

/** A directory, since mkdir is atomic. */
const LOCK_NAME = 'open.lock';
/** Lets a start after a crash wait for the stale lock instead of refusing. */
const HOLDER_NAME = 'open.lock.holder';

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    holder: string,
  ) {
    super(
      `The embedded data dir ${dataDir} is already open in another process (${holder}). An embedded data dir belongs to one process: stop that one first, or use another DATA_DIR.`,
    );
    this.name = 'DataDirInUseError';
  }
}

export interface DataDirLock {
  /** The process's exit releases it too. */
  release(): Promise<void>;
}

interface Holder {
  pid: number;
  hostname: string;
}

/** Real paths; a holder record naming our pid for one of these is ours, not a dead predecessor's. */
const heldHere = new Set<string>();

function readHolder(path: string): Holder | undefined {
  try {
    const holder = JSON.parse(readFileSync(path, 'utf8')) as Partial<Holder>;
    return typeof holder.pid === 'number' && typeof holder.hostname === 'string' ? (holder as Holder) : undefined;
  } catch {
    return undefined;
  }
}

function refusal(dataDir: string, holderPath: string): DataDirInUseError {
  const holder = readHolder(holderPath);
  return new DataDirInUseError(dataDir, holder ? `pid ${holder.pid} on ${holder.hostname}` : 'holder unknown');
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by another user
  }
  try {
    // A killed process stays a zombie until its parent reaps it; it holds nothing any more.
    return !/^\d+ \(.*\) Z/su.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc (not Linux): it exists
  }
}

function holderIsGone(holder: Holder | undefined, dir: string): boolean {
  if (!holder || holder.hostname !== hostname()) return false;
  // Our own pid recorded by a process before us (a restarted container reuses pids).
  if (holder.pid === process.pid) return !heldHere.has(dir);
  return !isRunning(holder.pid);
}

const stopOnLostLock = (dataDir: string) => (error: Error) => {
  // Another process took the dir over (we were blocked past the stale time): writing on would
  // corrupt it, so stop without closing the database.
  console.error(`Lost the lock on the embedded data dir ${dataDir} (${error.message}); stopping.`);
  process.exit(1);
};

/** PGlite has no lock of its own. A dead local holder's lock is waited out; an unknown or remote holder is refused. */
export async function lockDataDir(dataDir: string, onCompromised: (error: Error) => void = stopOnLostLock(dataDir)): Promise<DataDirLock> {
  mkdirSync(dataDir, { recursive: true });
  // One lock for every spelling of the path (relative, symlinked).
  const dir = realpathSync(dataDir);
  const holderPath = join(dir, HOLDER_NAME);
  const options = { lockfilePath: join(dir, LOCK_NAME), realpath: false, stale: DATA_DIR_LOCK_STALE_MS, onCompromised };
  let unlock: () => Promise<void>;
  try {
    unlock = await lockfile.lock(dir, options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
    if (!holderIsGone(readHolder(holderPath), dir)) throw refusal(dataDir, holderPath);
    // Wait for the dead holder's lock to go stale; a process that takes it meanwhile wins.
    const retryMs = 250;
    unlock = await lockfile
      .lock(dir, {
        ...options,
        retries: { retries: Math.ceil((DATA_DIR_LOCK_STALE_MS + 1000) / retryMs), factor: 1, minTimeout: retryMs, maxTimeout: retryMs },
      })
      .catch((retryError: NodeJS.ErrnoException) => {
        throw retryError.code === 'ELOCKED' ? refusal(dataDir, holderPath) : retryError;
      });
  }
  heldHere.add(dir);
  // Written whole under a temporary name, so a reader never sees half a record.
  const temporary = `${holderPath}.${process.pid}`;
  writeFileSync(temporary, JSON.stringify({ pid: process.pid, hostname: hostname() } satisfies Holder));
  renameSync(temporary, holderPath);

  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      heldHere.delete(dir);
      await unlock().catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ERELEASED') throw error; // already given up (compromised)
      });
    },
  };
}
