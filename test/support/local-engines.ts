/**
 * Real engines started by the tests themselves on this machine, from Debian's packages: PgBouncer
 * in transaction mode in front of a PostgreSQL, and a PostgreSQL primary with a streaming replica.
 * Each lives in a temporary directory of its own and is stopped (and the directory removed) by
 * `stop()`. PostgreSQL's tools and PgBouncer refuse to run as root: as root they run as `postgres`.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const asRoot = process.getuid?.() === 0;
const POSTGRES_UID = asRoot ? Number(execFileSync('id', ['-u', 'postgres']).toString()) : -1;
const POSTGRES_GID = asRoot ? Number(execFileSync('id', ['-g', 'postgres']).toString()) : -1;

/** A command line run as the engines' user (`postgres` when we are root). */
export function asEngineUser(command: string, args: string[]): [string, string[]] {
  return asRoot ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
}

/** Runs a command as the engines' user and returns its output; throws with its stderr when it fails. */
export function runAsEngineUser(command: string, args: string[]): string {
  const [file, argv] = asEngineUser(command, args);
  return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A temporary directory the engines' user owns. */
export function engineDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (asRoot) chownSync(dir, POSTGRES_UID, POSTGRES_GID);
  return dir;
}

export function writeEngineFile(path: string, text: string): void {
  writeFileSync(path, text);
  if (asRoot) chownSync(path, POSTGRES_UID, POSTGRES_GID);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Resolves once something accepts TCP connections on the port (or throws after `timeoutMs`). */
export async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface Pgbouncer {
  /** `target` with PgBouncer's host and port in place of the server's. */
  url: string;
  port: number;
  /** PgBouncer's process (it does not fork), for its CPU time. */
  pid: number;
  stop(): Promise<void>;
}

/**
 * PgBouncer (pool_mode=transaction, auth_type=trust) in front of the server `target` names, for
 * every database on it (`*`), so databases a test creates are reached through it as well.
 */
export async function startPgbouncer(target: string, options: { poolSize?: number } = {}): Promise<Pgbouncer> {
  const server = new URL(target);
  const user = decodeURIComponent(server.username || 'postgres');
  const dir = engineDir('pgbouncer-');
  const port = await freePort();
  writeEngineFile(join(dir, 'userlist.txt'), `"${user}" ""\n`);
  writeEngineFile(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      "unix_socket_dir = ''",
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 2000',
      `default_pool_size = ${options.poolSize ?? 40}`,
      'ignore_startup_parameters = extra_float_digits,options',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  // Debian installs it in /usr/sbin, which a non-root PATH may not hold.
  const binary = existsSync('/usr/sbin/pgbouncer') ? '/usr/sbin/pgbouncer' : 'pgbouncer';
  const child = spawn(binary, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr!.on('data', (chunk) => stderr.push(String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await Promise.race([
      waitForPort(port),
      exited.then(() => {
        throw new Error(`pgbouncer exited at start: ${stderr.join('')}`);
      }),
    ]);
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), port, pid: child.pid!, stop: () => stopChild(child, exited, dir) };
}

async function stopChild(child: ChildProcess, exited: Promise<void>, dir: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    // SIGTERM: PgBouncer's immediate shutdown (SIGINT would wait for every client to leave).
    child.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
}

/**
 * `url` on the server itself rather than through the test run's pooler (TEST_VIA_PGBOUNCER=1 sets
 * DATABASE_DIRECT_URL), for tools that keep session state across statements and so need a
 * connection of their own: the bench data generator (session settings, bulk loads, vacuum).
 */
export function directUrl(url: string): string {
  const direct = process.env.DATABASE_DIRECT_URL;
  if (!direct) return url;
  const target = new URL(url);
  const server = new URL(direct);
  target.hostname = server.hostname;
  target.port = server.port;
  return target.toString();
}

const PG_BIN = '/usr/lib/postgresql/15/bin';

export interface ReplicaPair {
  primaryUrl: string;
  replicaUrl: string;
  /** `pg_ctl stop` of the replica (`immediate`: as if it crashed). */
  stopReplica(mode?: 'fast' | 'immediate'): void;
  startReplica(): Promise<void>;
  /** SIGSTOP (`true`) or SIGCONT (`false`) to every process of the replica: it holds connections and answers nothing. */
  freezeReplica(frozen: boolean): void;
  /** Stops everything and removes the clusters. */
  stop(): void;
}

function pgCtl(dataDir: string, action: 'start' | 'stop', extra: string[] = []): void {
  runAsEngineUser(`${PG_BIN}/pg_ctl`, [action, '-D', dataDir, '-w', '-s', ...extra]);
}

/**
 * One test cluster's settings: its own port and socket directory, WAL for a streaming replica, and
 * `extra` lines last (a later line of postgresql.auto.conf overrides an earlier one).
 */
function clusterSettings(port: number, socketDir: string, extra: string[]): string {
  return [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${socketDir}'`,
    'wal_level = replica',
    'max_wal_senders = 4',
    'hot_standby = on',
    // Test clusters: nothing here must survive a machine crash.
    'fsync = off',
    'full_page_writes = off',
    'shared_buffers = 16MB',
    'max_connections = 60',
    ...extra,
    '',
  ].join('\n');
}

/** A new cluster in `dir`, started, that trusts local connections and replication from 127.0.0.1. */
function startPrimary(dir: string, port: number, root: string, database: string, extra: string[]): void {
  runAsEngineUser(`${PG_BIN}/initdb`, ['-D', dir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  writeEngineFile(join(dir, 'postgresql.auto.conf'), clusterSettings(port, root, extra));
  const hba = 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n';
  writeEngineFile(join(dir, 'pg_hba.conf'), hba);
  pgCtl(dir, 'start', ['-l', join(root, 'primary.log')]);
  runAsEngineUser(`${PG_BIN}/psql`, ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-qc', `create database ${database}`]);
}

/** A streaming replica of the primary on `primaryPort`, in `dir` (`pg_basebackup -R`), not started. */
function cloneReplica(dir: string, port: number, primaryPort: number, root: string, extra: string[]): void {
  // `-c fast`: a checkpoint at once rather than spread over the checkpoint interval.
  const source = ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres'];
  runAsEngineUser(`${PG_BIN}/pg_basebackup`, [...source, '-D', dir, '-R', '-X', 'stream', '-c', 'fast']);
  const upstream = `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres'\n`;
  writeEngineFile(join(dir, 'postgresql.auto.conf'), clusterSettings(port, root, extra) + upstream);
}

/** SIGSTOP or SIGCONT to a cluster's postmaster and every process it started. */
function signalCluster(dir: string, signal: 'SIGSTOP' | 'SIGCONT'): void {
  const postmaster = readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0].trim();
  const children = execFileSync('pgrep', ['-P', postmaster], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const pid of [postmaster, ...children]) process.kill(Number(pid), signal);
}

/**
 * A PostgreSQL 15 primary and a streaming replica of it (`pg_basebackup -R`), each its own
 * cluster on its own port in a temporary directory, with a database `database` on both; `settings`
 * (postgresql.conf lines) on both, after the test defaults.
 */
export async function startReplicaPair(database = 'app', settings: string[] = []): Promise<ReplicaPair> {
  const root = engineDir('replica-pair-');
  const [primaryDir, replicaDir] = [join(root, 'primary'), join(root, 'replica')];
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const stopAll = () => {
    for (const dir of [replicaDir, primaryDir]) {
      try {
        pgCtl(dir, 'stop', ['-m', 'immediate']);
      } catch {
        // Not running.
      }
    }
    rmSync(root, { recursive: true, force: true });
  };
  try {
    startPrimary(primaryDir, primaryPort, root, database, settings);
    cloneReplica(replicaDir, replicaPort, primaryPort, root, settings);
    const startReplica = async () => {
      pgCtl(replicaDir, 'start', ['-l', join(root, 'replica.log')]);
      await waitForPort(replicaPort);
    };
    await startReplica();
    return {
      primaryUrl: `postgres://postgres@127.0.0.1:${primaryPort}/${database}`,
      replicaUrl: `postgres://postgres@127.0.0.1:${replicaPort}/${database}`,
      stopReplica: (mode = 'fast') => pgCtl(replicaDir, 'stop', ['-m', mode]),
      startReplica,
      freezeReplica: (frozen) => signalCluster(replicaDir, frozen ? 'SIGSTOP' : 'SIGCONT'),
      stop: stopAll,
    };
  } catch (error) {
    stopAll();
    throw error;
  }
}
