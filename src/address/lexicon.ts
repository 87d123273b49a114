/** Word classes derived from the Pub 28 tables, as lookups the parser can ask. */
import { COMPOUND_DIRECTIONALS, DIRECTIONAL_SPELLINGS, STATE_CODES, STREET_SUFFIX_SPELLINGS, UNIT_DESIGNATORS } from './pub28-tables.js';

/** Inverts a "standard → spellings" table; a standard always maps to itself and wins any clash. */
function spellingIndex(table: Readonly<Record<string, readonly string[]>>): ReadonlyMap<string, string> {
  const index = new Map<string, string>();
  for (const [standard, spellings] of Object.entries(table)) {
    for (const spelling of spellings) if (!index.has(spelling)) index.set(spelling, standard);
  }
  for (const standard of Object.keys(table)) index.set(standard, standard);
  return index;
}

const SUFFIXES = spellingIndex(STREET_SUFFIX_SPELLINGS);
const DIRECTIONALS = spellingIndex(DIRECTIONAL_SPELLINGS);
const DESIGNATORS = spellingIndex(Object.fromEntries(Object.entries(UNIT_DESIGNATORS).map(([std, spec]) => [std, spec.spellings])));
const STATES = new Map<string, string>([
  ...Object.entries(STATE_CODES).map(([name, code]): [string, string] => [name.replaceAll(' ', ''), code]),
  ...Object.values(STATE_CODES).map((code): [string, string] => [code, code]),
]);

export const streetSuffix = (w: string): string | undefined => SUFFIXES.get(w);

export const directional = (w: string): string | undefined => DIRECTIONALS.get(w);

export const compoundDirectional = (first: string, second: string): string | undefined => COMPOUND_DIRECTIONALS[`${first} ${second}`];

/** `#` is not a designator here. */
export const unitDesignator = (w: string): string | undefined => DESIGNATORS.get(w);

export function designatorRequiresRange(w: string): boolean {
  const std = DESIGNATORS.get(w);
  return std !== undefined && UNIT_DESIGNATORS[std].requiresRange;
}

export function designatorTakesOrdinal(w: string): boolean {
  const std = DESIGNATORS.get(w);
  return std !== undefined && UNIT_DESIGNATORS[std].takesOrdinal === true;
}

export const ordinalNumber = (w: string): string | undefined => /^([0-9]+)(?:ST|ND|RD|TH)$/u.exec(w)?.[1];

export function ordinal(digits: string): string {
  const n = Number(digits.slice(-2));
  const ending = n >= 11 && n <= 13 ? 'TH' : (['TH', 'ST', 'ND', 'RD'][n % 10] ?? 'TH');
  return `${digits}${ending}`;
}

/** Takes the name with spaces removed (NEWYORK). */
export const stateCode = (compact: string): string | undefined => STATES.get(compact);

/** Longest first, for splitting glued forms like APT4. */
export const DESIGNATOR_SPELLINGS_LONGEST_FIRST: readonly string[] = [...DESIGNATORS.keys()].sort((a, b) => b.length - a.length);
