/** The one wording of the rule, wherever it is checked (REST bodies, GraphQL literals and variables, imported records). */
export const NUL_MESSAGE = 'Strings must not contain U+0000.';
/** The same rule as a detail's message, for a field. */
export const NUL_DETAIL = 'must not contain U+0000';

/**
 * True when a parsed JSON value holds U+0000 in any string or key. PostgreSQL text cannot store
 * it, so such input is refused up front. Iterative, so hostile nesting cannot overflow the stack.
 */
export function containsNul(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      if (item.includes('\u0000')) return true;
    } else if (Array.isArray(item)) {
      for (const element of item) pending.push(element);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, element] of Object.entries(item)) {
        if (key.includes('\u0000')) return true;
        pending.push(element);
      }
    }
  }
  return false;
}
