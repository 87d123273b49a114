/** One wording per rule, whether Ajv or a domain check refused the value. */

export const REQUIRED = 'is required';

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

export const mustBeOfType = (types: readonly string[]) => `must be ${orList(types.map((t) => ARTICLE[t] ?? t))}`;

export const mustBeOneOf = (values: readonly unknown[]) =>
  `must be one of: ${values.map((v) => (v === null ? 'null' : String(v))).join(', ')}`;

export const atLeastCharacters = (limit: number) => (limit === 1 ? 'must not be empty' : `must be at least ${limit} characters`);
export const atMostCharacters = (limit: number) => `must be at most ${limit} characters`;
export const atMostItems = (limit: number) => `must hold at most ${limit} items`;
