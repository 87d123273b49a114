import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DATA_DIR_LOCK_STALE_MS, DataDirInUseError, lockDataDir } from '../../src/infra/database/data-dir-lock.js';

const dirs: string[] = [];
const newDataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'data-dir-lock-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A lock as a process that is gone (or still running) left it: its directory `ageMs` old, and its holder record. */
function leaveLock(dataDir: string, ageMs: number, pid?: number) {
  mkdirSync(join(dataDir, 'open.lock'));
  const then = new Date(Date.now() - ageMs);
  utimesSync(join(dataDir, 'open.lock'), then, then);
  if (pid !== undefined) writeFileSync(join(dataDir, 'open.lock.holder'), JSON.stringify({ pid, hostname: hostname() }));
}

const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid;

describe('lockDataDir', () => {
  it('refuses a data dir already held, under any spelling of its path, until it is released', async () => {
    const dataDir = newDataDir();
    const lock = await lockDataDir(dataDir);
    await expect(lockDataDir(dataDir)).rejects.toThrow(DataDirInUseError);
    await expect(lockDataDir(relative(process.cwd(), dataDir))).rejects.toThrow(`pid ${process.pid} on ${hostname()}`);
    await lock.release();
    expect(existsSync(join(dataDir, 'open.lock'))).toBe(false);
    await (await lockDataDir(dataDir)).release();
  });

  it('names the dir and refuses at once when a running process holds it', async () => {
    const dataDir = newDataDir();
    leaveLock(dataDir, 0, process.ppid);
    const started = Date.now();
    await expect(lockDataDir(dataDir)).rejects.toThrow(
      `The embedded data dir ${dataDir} is already open in another process (pid ${process.ppid}`,
    );
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('refuses a fresh lock of unknown holder at once, and takes a stale one over at once', async () => {
    const dataDir = newDataDir();
    leaveLock(dataDir, 0);
    await expect(lockDataDir(dataDir)).rejects.toThrow('holder unknown');
    rmSync(join(dataDir, 'open.lock'), { recursive: true });
    leaveLock(dataDir, DATA_DIR_LOCK_STALE_MS + 1000);
    await (await lockDataDir(dataDir)).release();
  });

  it('waits for the lock of a holder that died to go stale, then takes it', async () => {
    const dataDir = newDataDir();
    leaveLock(dataDir, DATA_DIR_LOCK_STALE_MS - 1500, deadPid());
    const started = Date.now();
    const lock = await lockDataDir(dataDir);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThan(1000);
    expect(waited).toBeLessThan(4000);
    await lock.release();
  });
});
