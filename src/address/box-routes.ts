/** Lines opening with a box (PO, rural route, HC route, military). Output folds to itself, keeping standardizing idempotent. */
import { BOXED_ROUTE_WORDS, MILITARY_BOX_UNITS, PO_BOX_PREFIXES, ROUTE_PREFIXES, UNIT_NUMBER_WORDS } from './pub28-tables.js';
import { hasDigit } from './text.js';

interface RouteSpelling {
  standard: string;
  words: readonly string[];
  /** See BOXED_ROUTE_WORDS. */
  needsBox: boolean;
}

/** Longest first, so "RURAL ROUTE 2" is not read as "RURAL" then "ROUTE 2". */
const ROUTE_SPELLINGS: readonly RouteSpelling[] = [
  ...Object.entries(ROUTE_PREFIXES).flatMap(([standard, prefixes]) => prefixes.map((words) => ({ standard, words, needsBox: false }))),
  ...BOXED_ROUTE_WORDS.map((w) => ({ standard: 'RR', words: [w], needsBox: true })),
  ...MILITARY_BOX_UNITS.map((w) => ({ standard: w, words: [w], needsBox: true })),
].sort((a, b) => b.words.length - a.words.length);

/** One-word spellings arrive glued to their number ("RR2"). */
const GLUED_ROUTE = new RegExp(
  `^(${ROUTE_SPELLINGS.filter((s) => s.words.length === 1)
    .map((s) => s.words[0])
    .join('|')})([0-9][0-9A-Z]*)$`,
  'u',
);

/** `#` and `NO` between a box or route and its number ("BOX # 45", "RR NO 2") carry nothing. */
const isNumberMarker = (w: string | undefined): boolean => w === '#' || (w !== undefined && UNIT_NUMBER_WORDS.includes(w));

const startsWith = (ws: readonly string[], at: number, prefix: readonly string[]): boolean => prefix.every((w, i) => ws[at + i] === w);

function afterMarkers(ws: readonly string[], at: number): readonly string[] {
  let i = at;
  while (i < ws.length - 1 && isNumberMarker(ws[i]) && hasDigit(ws[i + 1] ?? '')) i++;
  return ws.slice(i);
}

const boxed = (ws: readonly string[]): readonly string[] => (ws[0] === 'BOX' ? ['BOX', ...afterMarkers(ws, 1)] : ws);

function routeAt(ws: readonly string[], at: number): { standard: string; number: string; rest: readonly string[] } | undefined {
  for (const spelling of ROUTE_SPELLINGS) {
    if (!startsWith(ws, at, spelling.words)) continue;
    const [number, ...rest] = afterMarkers(ws, at + spelling.words.length);
    if (number === undefined || !hasDigit(number)) continue;
    const box = boxed(rest);
    if (spelling.needsBox && !(box[0] === 'BOX' && hasDigit(box[1] ?? ''))) continue;
    return { standard: spelling.standard, number, rest: box };
  }
  return undefined;
}

function splitGluedRoute(ws: readonly string[], at: number): string[] {
  const glued = ws[at] === undefined ? null : GLUED_ROUTE.exec(ws[at]);
  return glued === null ? [...ws] : [...ws.slice(0, at), glued[1], glued[2], ...ws.slice(at + 1)];
}

export function foldBoxAddress(input: readonly string[]): string[] {
  const poBox = PO_BOX_PREFIXES.find((p) => startsWith(input, 0, p));
  if (poBox !== undefined) return ['PO', ...boxed(['BOX', ...input.slice(poBox.length)])];

  const ws = splitGluedRoute(input, 0);
  const route = routeAt(ws, 0);
  if (route !== undefined) return [route.standard, route.number, ...route.rest];

  // "BOX 45, RR 2" names the box first; Pub 28 writes the route first.
  const box = boxed(ws);
  if (box[0] === 'BOX' && hasDigit(box[1] ?? '')) {
    const trailing = routeAt(splitGluedRoute(box, 2), 2);
    if (trailing !== undefined) return [trailing.standard, trailing.number, 'BOX', box[1], ...trailing.rest];
  }
  return ws;
}
