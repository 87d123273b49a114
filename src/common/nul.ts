export const NUL_MESSAGE = 'Strings must not contain U+0000.';
export const NUL_DETAIL = 'must not contain U+0000';

/** PostgreSQL text cannot store U+0000, so it is refused up front. Iterative, so hostile nesting cannot overflow the stack. */
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
