import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { createLogger, lazyChildLogger } from '../../src/infra/logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(
        ...String(chunk)
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>),
      );
      done();
    },
  });
  return { lines, stream };
}

describe('a request logger made on first use', () => {
  it('makes no child for lines below the level, and writes the others with its bindings', () => {
    const { lines, stream } = capture();
    const parent = createLogger('warn', stream);
    const child = vi.spyOn(parent, 'child');
    const log = lazyChildLogger(parent, { reqId: 'r-1' });
    log.info('not written');
    log.debug({ a: 1 }, 'not written either');
    expect(child).not.toHaveBeenCalled();
    expect(log.level).toBe('warn');
    expect(log.isLevelEnabled('info')).toBe(false);
    log.error({ err: new Error('boom') }, 'written');
    log.warn('also written');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines.map((l) => [l.msg, l.reqId])).toEqual([
      ['written', 'r-1'],
      ['also written', 'r-1'],
    ]);
    expect(lines[0].err).toMatchObject({ message: 'boom' });
    expect(log.bindings()).toEqual({ reqId: 'r-1' });
  });

  it('gives children with both bindings, and takes a level of its own', () => {
    const { lines, stream } = capture();
    const parent = createLogger('warn', stream);
    const log = lazyChildLogger(parent, { reqId: 'r-2' });
    log.child({ component: 'x' }).error('from a child');
    log.level = 'info';
    log.info('now written');
    expect(parent.level).toBe('warn');
    const own = lazyChildLogger(parent, { reqId: 'r-3' }, { level: 'debug' });
    own.debug('debug line');
    expect(lines.map((l) => [l.msg, l.reqId, l.component])).toEqual([
      ['from a child', 'r-2', 'x'],
      ['now written', 'r-2', undefined],
      ['debug line', 'r-3', undefined],
    ]);
  });
});
