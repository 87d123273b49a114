/**
 * On-CPU time per request from `perf record -e cpu-clock -g` of a server started with
 * `--perf-basic-prof-only-functions` (only samples taken while the process ran, unlike `--cpu-prof`,
 * which samples wall time and charges a preempted system call or a descheduled thread to whatever
 * frame was on the stack): `perf script -i perf.data | tsx bench/perf-fold.ts --requests N --hz 2000
 * [--root DIR] [--top 30]`. Each sample is charged to its leaf symbol, and to the nearest JavaScript
 * frame above it (native work a frame called, e.g. JSON.stringify or a socket write, included),
 * bundle frames mapped back through `dist/*.js.map`; that frame's source file or package sums them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { TraceMap, originalPositionFor } from '@jridgewell/trace-mapping';

const argv = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const requests = Number(option('requests', '1'));
const usPerSample = 1e6 / Number(option('hz', '2000'));
const root = option('root', process.cwd());
const top = Number(option('top', '30'));

const maps = new Map<string, TraceMap | null>();
const mapOf = (path: string) => {
  if (!maps.has(path)) maps.set(path, existsSync(`${path}.map`) ? new TraceMap(readFileSync(`${path}.map`, 'utf8')) : null);
  return maps.get(path)!;
};

/** A perf-map JavaScript symbol (`JS:*'name file:///path:line:col`) as [source file or package, name file:line]. */
const labels = new Map<string, [string, string]>();
function jsLabel(symbol: string): [string, string] {
  let label = labels.get(symbol);
  if (label) return label;
  const match = /^JS:\S?'?(.*?) ?(?:file:\/\/)?(\/[^ ]*|node:[^ ]*|):(\d+):(\d+)$/.exec(symbol);
  if (!match) label = ['(generated code)', symbol.replace(/^JS:\S?'?/, '')];
  else {
    const [, name, file, line, column] = match;
    let path = file;
    let at = Number(line);
    const map = path.includes('/dist/') ? mapOf(path) : null;
    const original = map ? originalPositionFor(map, { line: at, column: Number(column) }) : null;
    if (original?.source) {
      path = join(path, '..', original.source);
      at = original.line ?? at;
    }
    const short = path.replace(/^.*node_modules\//, '').replace(`${root}/`, '');
    const own = /^(src|bench|node:)/.test(short);
    const owner = own ? short : short.startsWith('@') ? short.split('/').slice(0, 2).join('/') : short.split('/')[0];
    label = [owner || '(generated code)', `${name || '(anonymous)'} ${short}:${at}`];
  }
  labels.set(symbol, label);
  return label;
}

const byLeaf = new Map<string, number>();
const byFrame = new Map<string, number>();
const byOwner = new Map<string, number>();
const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
let samples = 0;
let stack: string[] = [];
function flush() {
  if (!stack.length) return;
  samples++;
  add(byLeaf, stack[0].startsWith('JS:') ? jsLabel(stack[0])[1] : stack[0]);
  const js = stack.find((symbol) => symbol.startsWith('JS:'));
  const [owner, frame] = js ? jsLabel(js) : ['(no JavaScript frame: GC, libuv, kernel)', '(no JavaScript frame)'];
  add(byFrame, frame);
  add(byOwner, owner);
  stack = [];
}
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.startsWith('\t') && !line.startsWith(' ')) {
    flush();
    continue;
  }
  const match = /^\s+[0-9a-f]+ (.*) \(([^)]*)\)$/.exec(line);
  if (match) stack.push(match[1].replace(/\+0x[0-9a-f]+$/, ''));
}
flush();

const perRequest = (count: number) => ((count * usPerSample) / requests).toFixed(1).padStart(7);
console.log(`${samples} samples, ${perRequest(samples)} µs on CPU per request (${requests} requests)`);
for (const [title, entries] of [
  ['by source file or package of the nearest JavaScript frame', byOwner],
  ['by nearest JavaScript frame', byFrame],
  ['by leaf symbol', byLeaf],
] as const) {
  console.log(`\n${title} (µs per request)`);
  for (const [key, count] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${perRequest(count)}  ${key.slice(0, 160)}`);
}
