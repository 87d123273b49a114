/**
 * README: its shell examples run as written. Every ```sh / ```bash block of README.md not marked
 * `<!-- not run by test/examples/readme-examples.test.ts: why -->` runs, in order, in one
 * `bash -eu -o pipefail` shell, after the `export` lines the start-up banner of a fresh `npm start`
 * (embedded mode, no platform token) prints, as a reader would paste them. The shell's PATH holds
 * every program of this machine but `uuidgen` and `jq` (the README promises `curl`, `node` and the
 * project are enough), and its `curl` fails on an HTTP error status, so an example that is refused
 * fails the run. Each `# → {…}` sample output must be what the run printed (its `…` stand for
 * anything), and no shell variable is assigned twice.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnService, type ServiceProcess } from '../processes/spawn-service.js';

const SKIP_MARK = /^<!-- not run by test\/examples\/readme-examples\.test\.ts: (.+) -->$/;
const HIDDEN = new Set(['uuidgen', 'jq']);

interface Block {
  line: number;
  code: string;
  skipped?: string;
}

/** The README's shell blocks, with the reason a block is not run, if it is marked. */
function shellBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(sh|bash)\s*$/.test(lines[i])) continue;
    const end = lines.indexOf('```', i + 1);
    blocks.push({ line: i + 1, code: lines.slice(i + 1, end).join('\n'), skipped: SKIP_MARK.exec(lines[i - 1] ?? '')?.[1] });
    i = end;
  }
  return blocks;
}

/** A directory of links to every program on PATH but the hidden ones, and a `curl` that fails on an HTTP error. */
function shimPath(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const from of (process.env.PATH ?? '').split(delimiter)) {
    let names: string[];
    try {
      names = readdirSync(from);
    } catch {
      continue;
    }
    for (const name of names) {
      const target = join(dir, name);
      if (HIDDEN.has(name) || name === 'curl' || existsSync(target)) continue;
      try {
        if (statSync(join(from, name)).isFile()) symlinkSync(join(from, name), target);
      } catch {
        // a dangling link or an unreadable entry: not a program
      }
    }
  }
  const curl = (process.env.PATH ?? '')
    .split(delimiter)
    .map((from) => join(from, 'curl'))
    .find((path) => existsSync(path));
  if (!curl) throw new Error('these examples need curl');
  writeFileSync(join(dir, 'curl'), `#!/bin/sh\nexec ${curl} --fail-with-body "$@"\n`, { mode: 0o755 });
  return dir;
}

/** `# → {…}` lines: the sample outputs, as the parts between their `…`. */
const samples = (code: string) =>
  [...code.matchAll(/^# → (\{.*)$/gm)].map((m) => ({
    sample: m[1],
    parts: m[1]
      .split('…')
      .map((part) => part.trim())
      .filter(Boolean),
  }));

/** Names a line assigns (`NAME=…`, `export A=… B=…`), outside quotes' contents well enough for these blocks. */
const assignedNames = (code: string) =>
  code
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .flatMap((line) => [...line.matchAll(/(?:^|\s|export\s+)([A-Za-z_][A-Za-z0-9_]*)=(?!=)/g)].map((m) => m[1]))
    .filter((name) => name === name.toUpperCase());

const readme = readFileSync('README.md', 'utf8');
const blocks = shellBlocks(readme);
const runnable = blocks.filter((block) => !block.skipped);

describe('the README shell examples, statically', () => {
  it('every block either runs or says why not, and most of them run', () => {
    expect(runnable.length).toBeGreaterThanOrEqual(8);
    expect(blocks.filter((block) => block.skipped).map((block) => block.skipped)).toHaveLength(blocks.length - runnable.length);
  });

  it('no block that runs needs uuidgen or jq, or holds a placeholder to fill in by hand', () => {
    for (const { line, code } of runnable) {
      const commands = code
        .split('\n')
        .filter((l) => !l.trimStart().startsWith('#'))
        .join('\n');
      expect({ line, uuidgen: /\buuidgen\b/.test(commands), jq: /\bjq\b/.test(commands) }).toEqual({ line, uuidgen: false, jq: false });
      expect({ line, placeholder: /<[a-z][a-z ]*>|gk_\.\.\.|stk_\.\.\./.exec(commands)?.[0] }).toEqual({ line, placeholder: undefined });
    }
  });

  it("the gateway's operations table lists every published operationId", () => {
    const operationIds = readdirSync('src/http/gateway/operations').map((file) => file.replace(/\.graphql$/, ''));
    expect(operationIds.length).toBeGreaterThanOrEqual(7);
    // The table: the run of table lines around the operationId header.
    const lines = readme.split('\n');
    const header = lines.findIndex((line) => line.startsWith('| operationId | Scope |'));
    let last = header;
    while (lines[last + 1]?.startsWith('|')) last++;
    const table = lines.slice(header, last + 1).join('\n');
    for (const operationId of operationIds)
      expect({ operationId, listed: table.includes(`| \`${operationId}\` |`) }).toEqual({ operationId, listed: true });
  });

  it('no shell variable is assigned twice', () => {
    const names = runnable.flatMap((block) => assignedNames(block.code));
    const repeated = names.filter((name, i) => names.indexOf(name) !== i);
    expect(repeated).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['IDEMPOTENCY_KEY', 'NOTIFICATION_ID']));
  });
});

describe('the README shell examples, run as written', () => {
  const work = mkdtempSync(join(tmpdir(), 'readme-examples-'));
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    // Empty values count as unset (config.ts): the quick start's embedded mode, with no platform token.
    service = await spawnService({
      DATABASE_URL: '',
      REDIS_URL: '',
      INTERNAL_API_TOKEN: '',
      NODE_ENV: 'development',
      DATA_DIR: join(work, 'data'),
    });
  }, 120_000);
  afterAll(async () => {
    await service?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  /** The banner's export lines, once its closing rule has been written. */
  async function bannerExports(): Promise<string[]> {
    const deadline = Date.now() + 5_000;
    while (!/─{72}\n\n/.test(service!.stderr.join('')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    return service!.stderr
      .join('')
      .split('\n')
      .filter((line) => /^ {2}export [A-Z_]+=/.test(line))
      .map((line) => line.trim());
  }

  it('run in one bash -eu shell without uuidgen or jq, each succeeds, and the sample outputs are what it prints', async () => {
    const exports = await bannerExports();
    expect(exports.join('\n')).toMatch(/API_URL=.*GATEWAY_KEY=.*SKIPTRACE_KEY=/);
    expect(exports.join('\n')).toMatch(/INTERNAL_API_TOKEN=/);
    const path = shimPath(join(work, 'bin'));
    const script = [...exports, ...runnable.map((block) => `# README.md line ${block.line}\n${block.code}`)].join('\n');
    writeFileSync(join(work, 'examples.sh'), script);

    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('bash', ['-eu', '-o', 'pipefail', join(work, 'examples.sh')], {
        cwd: process.cwd(),
        env: { PATH: path, HOME: process.env.HOME ?? work },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect({ code: run.code, stderr: run.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });

    // The hidden programs really were absent.
    const probe = await new Promise<number | null>((resolve) =>
      spawn('bash', ['-c', 'command -v uuidgen || command -v jq'], { env: { PATH: path } }).once('close', resolve),
    );
    expect(probe).not.toBe(0);

    for (const { sample, parts } of runnable.flatMap((block) => samples(block.code)))
      for (const part of parts) expect({ sample, part, printed: run.stdout.includes(part) }).toEqual({ sample, part, printed: true });
    // The Idempotency-Key example's retry is a replay, and the import found the sample file's records.
    expect(run.stdout).toMatch(/^idempotent-replayed: true/im);
    expect(run.stdout).toContain('Imported 2 records from examples/property-records.sample.csv');
  }, 240_000);
});
