/**
 * Business-entity designators at the end of an owner name, canonical form → word sequences
 * (after punctuation folding, so `L.L.C.` arrives as `LLC` and `L. L. C.` as `L L C`).
 *
 * A canonical form is also listed as its own spelling (implicitly), so folding is idempotent.
 * Every sequence that ends in a word which itself folds (COMPANY → CO) is listed with both
 * endings, so re-folding an already folded name finds the same longest match.
 */
export const ENTITY_SUFFIX_SPELLINGS: Readonly<Record<string, readonly (readonly string[])[]>> = {
  LLC: [
    ['L', 'L', 'C'],
    ['LIMITED', 'LIABILITY', 'COMPANY'],
    ['LIMITED', 'LIABILITY', 'CO'],
  ],
  PLLC: [
    ['P', 'L', 'L', 'C'],
    ['PROFESSIONAL', 'LIMITED', 'LIABILITY', 'COMPANY'],
    ['PROFESSIONAL', 'LIMITED', 'LIABILITY', 'CO'],
  ],
  LLP: [
    ['L', 'L', 'P'],
    ['LIMITED', 'LIABILITY', 'PARTNERSHIP'],
  ],
  LP: [
    ['L', 'P'],
    ['LIMITED', 'PARTNERSHIP'],
  ],
  INC: [['INCORPORATED']],
  CORP: [['CORPORATION']],
  CO: [['COMPANY']],
  LTD: [['LIMITED']],
  PC: [
    ['P', 'C'],
    ['PROFESSIONAL', 'CORPORATION'],
    ['PROFESSIONAL', 'CORP'],
  ],
};
