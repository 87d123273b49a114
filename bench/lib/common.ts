/** Small helpers shared by the benchmark's parts: seeded randomness, deterministic ids and keys, database URLs. */
import { createHash } from 'node:crypto';

/** Deterministic PRNG (mulberry32): the same seed gives the same data on every machine. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A standard normal draw (Box–Muller). */
export function normal(random: () => number): number {
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** The same value as PostgreSQL's `md5(concat_ws(':', ...parts))::uuid`. */
export function seededUuid(...parts: (string | number)[]): string {
  const h = createHash('md5').update(parts.join(':')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A key of the service's shape (`gk_`/`stk_` + 40 base62), derived from the seed so runs can recompute it. */
export function benchSecret(prefix: 'gk_' | 'stk_', seed: number, label: string): string {
  let body = '';
  for (let counter = 0; body.length < 40; counter++) {
    for (const byte of createHash('sha256').update(`${seed}:${prefix}:${label}:${counter}`).digest()) {
      if (byte < 248 && body.length < 40) body += BASE62[byte % 62];
    }
  }
  return prefix + body;
}

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/** The same server as `url`, another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export const log = (message: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
