/**
 * What a `.heapprofile` from `bench/lib/survivor-sample.ts` holds, per request: bytes by
 * allocating frame, and by the nearest frame of the service's own code (`src/`) or the floor's
 * (`bench/`) on the stack, bundle frames mapped through `dist/*.js.map`:
 * `tsx bench/survivor-report.ts FILE.heapprofile --requests N [--root DIR] [--top 25]`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TraceMap, originalPositionFor } from '@jridgewell/trace-mapping';

const argv = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const requests = Number(option('requests', '1'));
const root = option('root', process.cwd());
const top = Number(option('top', '25'));

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: Node[];
}
const { head } = JSON.parse(readFileSync(argv[0], 'utf8')) as { head: Node };

const maps = new Map<string, TraceMap | null>();
const mapOf = (path: string) => {
  if (!maps.has(path)) maps.set(path, existsSync(`${path}.map`) ? new TraceMap(readFileSync(`${path}.map`, 'utf8')) : null);
  return maps.get(path)!;
};

function label(frame: Node['callFrame']): string {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return name;
  let path = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  let line = frame.lineNumber + 1;
  const map = path.includes('/dist/') ? mapOf(path) : null;
  const original = map ? originalPositionFor(map, { line, column: frame.columnNumber }) : null;
  if (original?.source) {
    path = join(path, '..', original.source);
    line = original.line ?? line;
  }
  return `${name} ${path.replace(/^.*node_modules\//, '').replace(`${root}/`, '')}:${line}`;
}

const byFrame = new Map<string, number>();
const byOwn = new Map<string, number>();
let total = 0;
function walk(node: Node, stack: string[]) {
  const here = label(node.callFrame);
  const path = [...stack, here];
  if (node.selfSize) {
    total += node.selfSize;
    byFrame.set(here, (byFrame.get(here) ?? 0) + node.selfSize);
    const own = [...path].reverse().find((f) => / (src|bench)\//.test(f)) ?? '(no own frame)';
    const key = `${own}  <-  ${here}`;
    byOwn.set(key, (byOwn.get(key) ?? 0) + node.selfSize);
  }
  for (const child of node.children) walk(child, path);
}
walk(head, []);

const perRequest = (bytes: number) => (bytes / requests).toFixed(0).padStart(6);
console.log(`${argv[0]}: ${perRequest(total)} B per request surviving (${requests} requests)`);
for (const [title, entries] of [
  ['by allocating frame', byFrame],
  ['by nearest own frame <- allocating frame', byOwn],
] as const) {
  console.log(`\n${title} (B per request)`);
  for (const [key, bytes] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${perRequest(bytes)}  ${key}`);
}
