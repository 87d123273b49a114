import type { DestinationStream } from 'pino';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Shown in the line's head rather than as key=value. */
const HEAD_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'reqId', 'err']);

const value = (v: unknown) => (typeof v === 'string' ? (/[\s"=]/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v));

/** `12:00:01.234 INFO  [reqId] message key=value …`, then an error's stack. */
export function prettyLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 23) : '';
  const level = (LEVELS[entry.level as number] ?? String(entry.level)).padEnd(5);
  const request = entry.reqId ? ` [${String(entry.reqId)}]` : '';
  const fields = Object.entries(entry)
    .filter(([key]) => !HEAD_FIELDS.has(key))
    .map(([key, v]) => `${key}=${value(v)}`)
    .join(' ');
  const err = entry.err as { stack?: string; message?: string } | undefined;
  const stack = err ? `\n    ${(err.stack ?? err.message ?? '').split('\n').join('\n    ')}` : '';
  return `${time} ${level}${request} ${String(entry.msg ?? '')}${fields ? `  ${fields}` : ''}${stack}\n`;
}

/** pino still writes and redacts every line first; only its form on `out` changes. */
export function prettyLogDestination(out: { write(text: string): unknown } = process.stdout): DestinationStream {
  return { write: (line: string) => void out.write(prettyLine(line)) };
}
