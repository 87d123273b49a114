/** Character-level folding shared by address and name normalization. */

const COMBINING_MARKS = /\p{M}/gu;

/** Twice, because upper-casing can yield decomposable characters ("ΐ") and decomposing can yield lower case ("ª"). */
export function foldUnicode(s: string): string {
  const pass = (t: string): string => t.normalize('NFKD').replace(COMBINING_MARKS, '').toUpperCase();
  return pass(pass(s));
}

export const APOSTROPHES = /['\u2018\u2019\u02BC\u02B9\u0060\u00B4\u2032]/gu;

/** "L.L.C." → "LLC", but "ST.LOUIS" keeps its period for the caller to split: only periods between lone letters go. */
export function joinInitialisms(s: string): string {
  return s.replace(/(?<![\p{L}\p{N}])(\p{L})\.(?=\p{L}(?![\p{L}\p{N}]))/gu, '$1');
}

export function words(s: string): string[] {
  return s.split(/\s+/u).filter((w) => w !== '');
}

export function foldToWords(s: string, apostrophe: ' ' | ''): string {
  const folded = joinInitialisms(foldUnicode(s).replace(APOSTROPHES, apostrophe));
  return words(folded.replace(/[^\p{L}\p{N}]+/gu, ' ')).join(' ');
}

export const hasDigit = (w: string): boolean => /[0-9]/.test(w);
