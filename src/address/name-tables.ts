/**
 * Sequences ending in a word that itself folds (COMPANY → CO) are listed with both endings, so
 * re-folding a folded name finds the same longest match (idempotence).
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
