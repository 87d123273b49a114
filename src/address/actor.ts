/** The name parts are exported because the records provider must fold owner names the same way. */
import { ENTITY_SUFFIX_SPELLINGS } from './name-tables.js';
import { APOSTROPHES, foldUnicode, joinInitialisms, words } from './text.js';

export type ActorInput = { type: 'person'; firstName?: string | null; lastName?: string | null } | { type: 'entity'; name?: string | null };

export type NormalizedActor = { type: 'person'; firstName: string | null; lastName: string | null } | { type: 'entity'; name: string };

/** Null also when the name folds to nothing: the lookup is then by address alone. */
export function normalizeActor(a: ActorInput | null | undefined): NormalizedActor | null {
  if (a === null || a === undefined || typeof a !== 'object') return null;
  if (a.type === 'person') {
    const firstName = normalizePersonNamePart(text(a.firstName)) || null;
    const lastName = normalizePersonNamePart(text(a.lastName)) || null;
    return firstName === null && lastName === null ? null : { type: 'person', firstName, lastName };
  }
  if (a.type === 'entity') {
    const name = normalizeEntityName(text(a.name));
    return name === '' ? null : { type: 'entity', name };
  }
  return null;
}

/** Spaces go too (`De La Cruz` → `DELACRUZ`): that matches the most spellings across record sources. */
export function normalizePersonNamePart(s: string): string {
  return foldUnicode(text(s)).replace(/[^\p{L}\p{N}]/gu, '');
}

/** `Acme Company, Incorporated` → `ACME CO INC`; `&` is read as AND. */
export function normalizeEntityName(name: string): string {
  const folded = joinInitialisms(foldUnicode(text(name)).replace(APOSTROPHES, '').replace(/&/gu, ' AND '));
  return foldEntitySuffixes(words(folded.replace(/[^\p{L}\p{N}]+/gu, ' '))).join(' ');
}

/** Suffix spellings as word sequences, longest first so `L L P` wins over `L P`. */
const SUFFIX_PATTERNS: readonly { words: readonly string[]; canonical: string }[] = Object.entries(ENTITY_SUFFIX_SPELLINGS)
  .flatMap(([canonical, spellings]) => [[canonical], ...spellings].map((ws) => ({ words: ws, canonical })))
  .sort((a, b) => b.words.length - a.words.length);

/** Folds designators from the end inward, so `CO INC` and `COMPANY INCORPORATED` agree. */
function foldEntitySuffixes(ws: readonly string[]): string[] {
  const foldedFromEnd: string[] = [];
  let end = ws.length;
  for (;;) {
    const match = SUFFIX_PATTERNS.find((p) => p.words.length <= end && p.words.every((w, i) => ws[end - p.words.length + i] === w));
    if (match === undefined) break;
    foldedFromEnd.push(match.canonical);
    end -= match.words.length;
  }
  return [...ws.slice(0, end), ...foldedFromEnd.reverse()];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
