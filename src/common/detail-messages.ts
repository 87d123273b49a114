/**
 * The wording of an error detail's `message`, one per rule whoever checks it (Ajv's keywords on
 * REST, a domain's own checks), so a caller reads one wording whichever route refused the value.
 */

export const REQUIRED = 'is required';

/** A field no input type declares. */
export const UNKNOWN_FIELD = 'is not a known field';

const ARTICLE: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
  null: 'null',
};

const orList = (words: readonly string[]) => (words.length < 2 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`);

/** A JSON type rule, e.g. `must be a string or null` for `['string', 'null']`. */
export const mustBeOfType = (types: readonly string[]) => `must be ${orList(types.map((t) => ARTICLE[t] ?? t))}`;

/** An enumeration, naming every allowed value. */
export const mustBeOneOf = (values: readonly unknown[]) =>
  `must be one of: ${values.map((v) => (v === null ? 'null' : String(v))).join(', ')}`;

export const atLeastCharacters = (limit: number) => (limit === 1 ? 'must not be empty' : `must be at least ${limit} characters`);
export const atMostCharacters = (limit: number) => `must be at most ${limit} characters`;
export const atMostItems = (limit: number) => `must hold at most ${limit} items`;
