/** Context-free on purpose: a line and its standardized output tokenize alike, keeping standardizing idempotent. */
import { foldBoxAddress } from './box-routes.js';
import {
  compoundDirectional,
  DESIGNATOR_SPELLINGS_LONGEST_FIRST,
  designatorTakesOrdinal,
  ordinalNumber,
  unitDesignator,
} from './lexicon.js';
import { COUNTY_WORDS, HIGHWAY_WORDS, ROAD_WORDS, UNIT_NUMBER_WORDS } from './pub28-tables.js';
import { APOSTROPHES, foldUnicode, hasDigit, joinInitialisms, words } from './text.js';

/** "½" → " 1/2", so "123½" reads as "123 1/2" rather than "1231/2". */
const VULGAR_FRACTIONS = /[\u00BC-\u00BE\u2150-\u215E]/gu;

export function tokenizeAddressLine(line: string): string[] {
  return rewriteWords(lexWords(line));
}

function lexWords(line: string): string[] {
  let s = line.replace(VULGAR_FRACTIONS, (f) => ` ${f.normalize('NFKD')}`);
  s = foldUnicode(s).replace(/\u2044/gu, '/');
  // Street names drop apostrophes (O'FARRELL → OFARRELL) rather than splitting the word.
  s = joinInitialisms(s.replace(APOSTROPHES, ''));
  s = s.replace(/#/gu, ' # ').replace(/[^\p{L}\p{N}\-/#]+/gu, ' ');
  return words(s).flatMap(cleanSeparators);
}

/**
 * Hyphens survive only in words with a digit, slashes only between digits. Repeated until stable:
 * a split can leave a digitless piece whose hyphen must go too ("AB-C/D1" → "AB", "C", "D1").
 */
function cleanSeparators(word: string): string[] {
  let parts = [word];
  for (;;) {
    const next = parts.flatMap(cleanSeparatorsOnce);
    if (sameWords(next, parts)) return next;
    parts = next;
  }
}

function cleanSeparatorsOnce(w: string): string[] {
  if (!hasDigit(w)) return words(w.replace(/[-/]/gu, ' '));
  return words(
    w
      .replace(/[-/]{2,}/gu, ' ')
      .replace(/(?<![0-9])\/|\/(?![0-9])/gu, ' ')
      .replace(/(?<![\p{L}\p{N}])-|-(?![\p{L}\p{N}])/gu, ' '),
  );
}

/** Repeated until stable because one rewrite can enable another; the cap only guarantees termination. */
export function rewriteWords(input: readonly string[]): string[] {
  let current = [...input];
  for (let round = 0; round < MAX_REWRITE_ROUNDS; round++) {
    const next = cleanUnitMarkers(
      foldOrdinalUnits(spellOutHighwayNames(foldBoxAddress(joinCompoundDirectionals(splitGluedDesignators(current))))),
    );
    if (sameWords(next, current)) break;
    current = next;
  }
  return current;
}

const MAX_REWRITE_ROUNDS = 16;

/** "APT4", "STE200", "APT-4B" → designator and number as separate words. */
function splitGluedDesignators(ws: readonly string[]): string[] {
  return ws.flatMap((w) => {
    if (unitDesignator(w) !== undefined) return [w];
    for (const spelling of DESIGNATOR_SPELLINGS_LONGEST_FIRST) {
      const rest = w.startsWith(spelling) ? w.slice(spelling.length).replace(/^-/u, '') : '';
      if (/^[0-9]/u.test(rest)) return [spelling, rest];
    }
    return [w];
  });
}

function joinCompoundDirectionals(ws: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < ws.length; i++) {
    const joined = i + 1 < ws.length ? compoundDirectional(ws[i], ws[i + 1]) : undefined;
    if (joined !== undefined) i++;
    out.push(joined ?? ws[i]);
  }
  return out;
}

/** "28TH FLOOR" and "FLOOR 28TH" → "FLOOR 28". */
function foldOrdinalUnits(ws: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < ws.length; i++) {
    const next = ws[i + 1];
    const numberBefore = ordinalNumber(ws[i]);
    const numberAfter = next === undefined ? undefined : ordinalNumber(next);
    if (numberBefore !== undefined && next !== undefined && designatorTakesOrdinal(next)) {
      out.push(next, numberBefore);
      i++;
    } else if (numberAfter !== undefined && designatorTakesOrdinal(ws[i])) {
      out.push(ws[i], numberAfter);
      i++;
    } else {
      out.push(ws[i]);
    }
  }
  return out;
}

/** Pub 28 §234, so "HWY 71" and "HIGHWAY 71" agree, as do "CR 12" and "COUNTY ROAD 12". */
function spellOutHighwayNames(ws: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < ws.length; i++) {
    const numbered = (offset: number): boolean => i + offset < ws.length && hasDigit(ws[i + offset]);
    if (HIGHWAY_WORDS.includes(ws[i]) && numbered(1)) {
      out.push('HIGHWAY');
    } else if (ws[i] === 'CR' && numbered(1)) {
      out.push('COUNTY', 'ROAD');
    } else if (COUNTY_WORDS.includes(ws[i]) && i + 1 < ws.length && ROAD_WORDS.includes(ws[i + 1]) && numbered(2)) {
      out.push('COUNTY', 'ROAD');
      i++;
    } else {
      out.push(ws[i]);
    }
  }
  return out;
}

/** Drops markers that carry nothing: "APT # 4", a trailing `#`, "APT NO 4". */
function cleanUnitMarkers(ws: readonly string[]): string[] {
  const out: string[] = [];
  ws.forEach((w, i) => {
    const prev = out.at(-1);
    const next = ws[i + 1];
    const prevIsMarker = prev !== undefined && (prev === '#' || unitDesignator(prev) !== undefined);
    if (w === '#') {
      const afterDesignator = prev !== undefined && unitDesignator(prev) !== undefined;
      const beforeMarker = next === undefined || next === '#' || unitDesignator(next) !== undefined;
      if (!afterDesignator && !beforeMarker) out.push(w);
    } else if (!(UNIT_NUMBER_WORDS.includes(w) && prevIsMarker && next !== undefined && hasDigit(next))) {
      out.push(w);
    }
  });
  return out;
}

function sameWords(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((w, i) => w === b[i]);
}
