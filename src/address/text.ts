/** Character-level folding shared by address and name normalization. */

const COMBINING_MARKS = /\p{M}/gu;

/**
 * Upper-cases and strips diacritics ("Peña" → "PENA") with compatibility decomposition
 * ("ﬁ" → "FI", "²" → "2"). Run twice because upper-casing can itself yield characters that
 * decompose further (e.g. "ΐ"), and decomposing can yield lower case (e.g. "ª" → "a").
 */
export function foldUnicode(s: string): string {
  const pass = (t: string): string => t.normalize('NFKD').replace(COMBINING_MARKS, '').toUpperCase();
  return pass(pass(s));
}

/** Apostrophe-like characters, which vanish or split words depending on the caller. */
export const APOSTROPHES = /['\u2018\u2019\u02BC\u02B9\u0060\u00B4\u2032]/gu;

/**
 * Joins dotted initialisms ("N.E." → "NE", "L.L.C." → "LLC", "P.O." → "PO") while leaving
 * other periods for the caller to turn into spaces ("ST.LOUIS" → "ST LOUIS", "N.MAIN" → "N MAIN").
 * A period goes only when it sits between two lone letters.
 */
export function joinInitialisms(s: string): string {
  return s.replace(/(?<![\p{L}\p{N}])(\p{L})\.(?=\p{L}(?![\p{L}\p{N}]))/gu, '$1');
}

/** Splits on whitespace, dropping empties. */
export function words(s: string): string[] {
  return s.split(/\s+/u).filter((w) => w !== '');
}

/** Letters, digits and spaces only, whitespace collapsed: the folding used for cities and entity names. */
export function foldToWords(s: string, apostrophe: ' ' | ''): string {
  const folded = joinInitialisms(foldUnicode(s).replace(APOSTROPHES, apostrophe));
  return words(folded.replace(/[^\p{L}\p{N}]+/gu, ' ')).join(' ');
}

export const hasDigit = (w: string): boolean => /[0-9]/.test(w);
