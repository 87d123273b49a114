/**
 * README, Configuration: LOG_FORMAT=pretty writes each log entry as one readable line (time, level,
 * request id, message, fields, an error's stack) instead of JSON, for development; secrets are
 * redacted by pino before the line is formatted, as in JSON.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/infra/config.js';
import { createLogger } from '../../src/infra/logger.js';
import { prettyLine, prettyLogDestination } from '../../src/infra/pretty-log.js';

function capture() {
  const lines: string[] = [];
  const log = createLogger('info', prettyLogDestination({ write: (text: string) => lines.push(text) }));
  return { log, lines };
}

describe('LOG_FORMAT', () => {
  it('is json by default, pretty on request, and refuses anything else naming the variable', () => {
    expect(loadConfig({}).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'fancy' })).toThrow(/LOG_FORMAT/);
  });

  it('pretty: one line per entry with time, level, request id, message and fields', () => {
    const { log, lines } = capture();
    log.child({ reqId: 'req-1' }).info({ port: 4000, database: 'embedded', note: 'two words' }, 'service ready');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d{2}:\d{2}:\d{2}\.\d{3} INFO {2}\[req-1\] service ready {2}port=4000 database=embedded note="two words"\n$/,
    );
  });

  it("pretty: an error's message and stack follow, indented; secrets stay redacted", () => {
    const { log, lines } = capture();
    log.error({ err: new Error('boom'), authorization: 'Bearer gk_secret' }, 'failed');
    expect(lines[0]).toMatch(/ERROR failed {2}authorization=\[redacted\]\n {4}Error: boom\n {8}at /);
    expect(lines.join('')).not.toContain('gk_secret');
  });

  it('pretty: a line that is not JSON passes through unchanged', () => {
    expect(prettyLine('plain text')).toBe('plain text\n');
  });
});
