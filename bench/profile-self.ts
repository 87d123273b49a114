/**
 * Self time of a `--cpu-prof` profile per answered request, by source file and by frame, bundle
 * frames mapped back through `dist/*.js.map`: `tsx bench/profile-self.ts PROFILE.cpuprofile
 * --requests N [--root DIR] [--top 25]` (N: the requests `bench/profile.ts` reports "in all"; the
 * profile covers start-up too, so figures include it).
 */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TraceMap, originalPositionFor } from '@jridgewell/trace-mapping';

const argv = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const file = argv[0];
const requests = Number(option('requests', '1'));
const root = option('root', process.cwd());
const top = Number(option('top', '25'));

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
const { nodes, samples, timeDeltas } = JSON.parse(readFileSync(file, 'utf8')) as {
  nodes: { id: number; callFrame: Frame }[];
  samples: number[];
  timeDeltas: number[];
};

const maps = new Map<string, TraceMap | null>();
function mapOf(path: string): TraceMap | null {
  if (!maps.has(path)) maps.set(path, existsSync(`${path}.map`) ? new TraceMap(readFileSync(`${path}.map`, 'utf8')) : null);
  return maps.get(path)!;
}

/** Where a frame's code was written: [file, frame label]. */
function locate(frame: Frame): [string, string] {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return [name.startsWith('(') ? name : '(native)', name];
  let path = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  let line = frame.lineNumber + 1;
  const map = path.includes('/dist/') ? mapOf(path) : null;
  if (map) {
    const original = originalPositionFor(map, { line, column: frame.columnNumber });
    if (original.source) {
      path = join(path, '..', original.source);
      line = original.line ?? line;
    }
  }
  const short = path.replace(/^.*node_modules\//, '').replace(`${root}/`, '');
  const owner = short.startsWith('src/') || short.startsWith('bench/') || short.startsWith('node:') ? short : short.split('/')[0];
  return [owner.startsWith('@') ? short.split('/').slice(0, 2).join('/') : owner, `${name} ${short}:${line}`];
}

const byNode = new Map(nodes.map((n) => [n.id, locate(n.callFrame)]));
const byFile = new Map<string, number>();
const byFrame = new Map<string, number>();
let total = 0;
let idle = 0;
samples.forEach((id, i) => {
  const [owner, frame] = byNode.get(id)!;
  const us = timeDeltas[i] ?? 0;
  total += us;
  if (owner === '(idle)') idle += us;
  byFile.set(owner, (byFile.get(owner) ?? 0) + us);
  byFrame.set(frame, (byFrame.get(frame) ?? 0) + us);
});

const perRequest = (us: number) => (us / requests).toFixed(1).padStart(7);
console.log(`${file}: ${requests} requests, ${perRequest(total - idle)} µs busy per request (idle excluded)`);
const list = (title: string, entries: Map<string, number>) => {
  console.log(`\n${title} (µs per request, % of busy)`);
  for (const [key, us] of [...entries]
    .filter(([k]) => k !== '(idle)' && !k.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    console.log(`${perRequest(us)} ${((100 * us) / (total - idle)).toFixed(1).padStart(5)}%  ${key}`);
};
list('by source file or package', byFile);
list('by frame', byFrame);
