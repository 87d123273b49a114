/**
 * The hot paths' raw SQL binds `?` placeholders as `$n` parameters: only placeholders outside
 * quoted literals and identifiers may be numbered, or a `?` inside a string would shift them.
 */
import { describe, expect, it } from 'vitest';
import { toPositional } from '../../src/infra/database/sql.js';

describe('toPositional', () => {
  it('numbers placeholders in order', () => {
    expect(toPositional('select * from t where a = ? and b = any(?::uuid[]) and c <> ?')).toBe(
      'select * from t where a = $1 and b = any($2::uuid[]) and c <> $3',
    );
  });

  it('leaves question marks inside literals and quoted identifiers alone', () => {
    expect(toPositional(`select '?', 'it''s ?', "col?" from t where a = ? and b = 'x?y' and c = ?`)).toBe(
      `select '?', 'it''s ?', "col?" from t where a = $1 and b = 'x?y' and c = $2`,
    );
  });

  it("keeps the feed's escape clause, a literal holding one backslash", () => {
    expect(toPositional(`(title ilike ? escape '\\' or body ilike ? escape '\\') and user_id = ?`)).toBe(
      `(title ilike $1 escape '\\' or body ilike $2 escape '\\') and user_id = $3`,
    );
  });

  it('returns a statement without placeholders unchanged', () => {
    expect(toPositional('select 1')).toBe('select 1');
  });
});
