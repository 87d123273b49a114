/**
 * USPS Pub 28 standardization, enough for equivalent spellings to hash equal; no address database
 * is consulted. Total and idempotent (property tests).
 */
import { designatorRequiresRange, directional, ordinal, ordinalNumber, stateCode, streetSuffix, unitDesignator } from './lexicon.js';
import { ROUTE_SUFFIXES } from './pub28-tables.js';
import { rewriteWords, tokenizeAddressLine } from './tokenize.js';
import { foldToWords, hasDigit } from './text.js';

export interface AddressInput {
  line1: string;
  line2?: string | null;
  city: string;
  state: string;
  zip: string;
}

export interface StandardAddress {
  /** Includes the secondary unit. */
  line1: string;
  /** House number, with a trailing fraction when present (`123 1/2`). */
  primaryNumber: string | null;
  preDirectional: string | null;
  streetName: string | null;
  suffix: string | null;
  postDirectional: string | null;
  /** Of the first secondary unit. */
  unitDesignator: string | null;
  /** Everything after the designator: `4`, or `C APT 4` for `BLDG C APT 4`. */
  unitNumber: string | null;
  city: string;
  state: string;
  zip5: string;
  zip4: string | null;
}

type DeliveryLine = Omit<StandardAddress, 'line1' | 'city' | 'state' | 'zip5' | 'zip4'>;

export function standardizeAddress(a: AddressInput): StandardAddress {
  const delivery = parseDeliveryLine(deliveryWords(text(a.line1), text(a.line2)));
  return {
    line1: composeDeliveryLine(delivery),
    ...delivery,
    city: standardizeCity(text(a.city)),
    state: standardizeState(text(a.state)),
    ...standardizeZip(text(a.zip)),
  };
}

/** Apostrophes become spaces (`COEUR D ALENE`), as USPS spells it. */
export function standardizeCity(city: string): string {
  return foldToWords(city, ' ');
}

export function standardizeState(state: string): string {
  const compact = foldToWords(state, '').replaceAll(' ', '');
  return stateCode(compact) ?? compact;
}

/** 4- and 8-digit forms are ZIPs whose leading zero a spreadsheet dropped (`2134` → `02134`). */
export function standardizeZip(zip: string): { zip5: string; zip4: string | null } {
  let digits = zip.replace(/[^0-9]/gu, '');
  if (digits.length === 4 || digits.length === 8) digits = `0${digits}`;
  return { zip5: digits.slice(0, 5), zip4: digits.length >= 9 ? digits.slice(5, 9) : null };
}

/** Callers are typed, but records arrive from JSON and CSV; treat anything odd as text or blank. */
function text(value: unknown): string {
  if (typeof value === 'string') return value;
  return typeof value === 'number' || typeof value === 'bigint' ? String(value) : '';
}

/** Copes with the usual ways CRMs split one delivery line across line1 and line2. */
function deliveryWords(line1: string, line2: string): string[] {
  const first = tokenizeAddressLine(line1);
  const second = tokenizeAddressLine(line2);
  if (second.length === 0) return first;
  // The unit was typed on line 1 and the street on line 2.
  if (isUnitRun(first) && !isUnitRun(second)) return rewriteWords([...second, ...first]);
  // A bare "4" or "B" on line 2 is a unit number without a designator: Pub 28 writes it "# 4".
  if (second.length === 1 && isUnitValue(second[0]) && (hasDigit(second[0]) || second[0].length === 1)) {
    return rewriteWords([...first, '#', ...second]);
  }
  // Rewrites run again over the joined words so the result matches re-tokenizing the joined line.
  return rewriteWords([...first, ...second]);
}

function parseDeliveryLine(words: readonly string[]): DeliveryLine {
  const { primaryNumber, length } = takePrimaryNumber(words);
  // At least one street word must separate the number from a unit, so "55 FRONT ST" keeps FRONT.
  const unitAt = firstUnitIndex(words, length + 1);
  return {
    primaryNumber,
    ...splitStreet(words.slice(length, unitAt)),
    ...splitUnit(words.slice(unitAt)),
  };
}

function takePrimaryNumber(words: readonly string[]): { primaryNumber: string | null; length: number } {
  const first = words[0];
  // An ordinal alone ("1ST AVE") is a street name, not a house number.
  if (first === undefined || !hasDigit(first) || /^[0-9]+(ST|ND|RD|TH)$/u.test(first)) {
    return { primaryNumber: null, length: 0 };
  }
  const fraction = words[1] !== undefined && /^[0-9]+\/[0-9]+$/u.test(words[1]) ? words[1] : undefined;
  return fraction === undefined ? { primaryNumber: first, length: 1 } : { primaryNumber: `${first} ${fraction}`, length: 2 };
}

/** Each part is taken only while a name word would remain, so "100 NORTH ST" keeps NORTH as the name. */
function splitStreet(words: readonly string[]): Pick<DeliveryLine, 'preDirectional' | 'streetName' | 'suffix' | 'postDirectional'> {
  const rest = [...words];
  const postDirectional = rest.length >= 2 ? directional(rest[rest.length - 1]) : undefined;
  if (postDirectional !== undefined) rest.pop();
  const suffix = rest.length >= 2 ? streetSuffix(rest[rest.length - 1]) : undefined;
  if (suffix !== undefined) rest.pop();
  const preDirectional = rest.length >= 2 ? directional(rest[0]) : undefined;
  if (preDirectional !== undefined) rest.shift();
  const name = numberedStreetName(rest, suffix);
  return {
    preDirectional: preDirectional ?? null,
    streetName: name.length > 0 ? name.join(' ') : null,
    suffix: suffix ?? null,
    postDirectional: postDirectional ?? null,
  };
}

/** "42 ST" → "42ND ST" as Pub 28 writes it; without a suffix it is a grid coordinate ("200 S 300 W"). */
function numberedStreetName(name: readonly string[], suffix: string | undefined): readonly string[] {
  if (name.length !== 1 || suffix === undefined || ROUTE_SUFFIXES.includes(suffix)) return name;
  const number = /^[0-9]+$/u.test(name[0]) ? name[0] : ordinalNumber(name[0]);
  return number === undefined ? name : [ordinal(number)];
}

function splitUnit(words: readonly string[]): Pick<DeliveryLine, 'unitDesignator' | 'unitNumber'> {
  if (words.length === 0) return { unitDesignator: null, unitNumber: null };
  const [designator, ...rest] = words.map((w) => unitDesignator(w) ?? w);
  return { unitDesignator: designator, unitNumber: rest.length > 0 ? rest.join(' ') : null };
}

/** A word that can follow a designator as its number: not a marker, not a street suffix. */
export function isUnitValue(w: string): boolean {
  return w !== '#' && unitDesignator(w) === undefined && streetSuffix(w) === undefined;
}

/** 0 when no unit starts at `i`. */
function unitLengthAt(words: readonly string[], i: number): number {
  const w = words[i];
  const next = words[i + 1];
  if (w === '#' || designatorRequiresRange(w)) return next !== undefined && isUnitValue(next) ? 2 : 0;
  if (unitDesignator(w) !== undefined) return next !== undefined && isUnitValue(next) && hasDigit(next) ? 2 : 1;
  return 0;
}

/** Earliest index from which every remaining word is a unit; right to left so long inputs stay linear. */
function firstUnitIndex(words: readonly string[], from: number): number {
  const unitsToEnd: boolean[] = new Array<boolean>(words.length + 1).fill(false);
  unitsToEnd[words.length] = true;
  for (let i = words.length - 1; i >= 0; i--) {
    const length = unitLengthAt(words, i);
    unitsToEnd[i] = length > 0 && unitsToEnd[i + length];
  }
  for (let i = Math.max(from, 0); i < words.length; i++) if (unitsToEnd[i]) return i;
  return words.length;
}

function isUnitRun(words: readonly string[]): boolean {
  return words.length > 0 && firstUnitIndex(words, 0) === 0;
}

function composeDeliveryLine(d: DeliveryLine): string {
  return [d.primaryNumber, d.preDirectional, d.streetName, d.suffix, d.postDirectional, d.unitDesignator, d.unitNumber]
    .filter((part): part is string => part !== null)
    .join(' ');
}
