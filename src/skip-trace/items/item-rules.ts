/**
 * Only the list's shape (what makes the whole request unreadable) refuses the list; an item breaking
 * its own trace's rules fails alone, with paths relative to the item.
 */
import { atMostItems, mustBeOfType, mustBeOneOf, REQUIRED, UNKNOWN_FIELD } from '../../common/detail-messages.js';
import { AppError, badInput, type ErrorDetail } from '../../common/errors.js';
import { ACTOR_TYPES } from '../input-rules.js';
import { checkTraceInput, type SkipTraceInput, type ValidTrace } from '../trace-input.js';

export interface ListItemInput extends SkipTraceInput {
  key?: string | null;
}

export const ITEM_FIELDS = ['key', 'address', 'actor'] as const;

/** The caller's own id of the row, unique within its list. */
export const ITEM_KEY_RULE = {
  keywords: { minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._:-]{1,64}$' },
  message: 'must be 1 to 64 characters of A-Z a-z 0-9 . _ : -',
} as const;
const KEY = new RegExp(ITEM_KEY_RULE.keywords.pattern, 'u');

export interface ListShape {
  max: number;
  otherFields?: readonly string[];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export const itemPath = (index: number, field?: string) => `items[${index}]${field ? `.${field}` : ''}`;

function itemShapeProblems(item: unknown, index: number): ErrorDetail[] {
  if (!isObject(item)) return [{ path: itemPath(index), message: mustBeOfType(['object']) }];
  const details = Object.keys(item)
    .filter((field) => !(ITEM_FIELDS as readonly string[]).includes(field))
    .map((field) => ({ path: itemPath(index, field), message: UNKNOWN_FIELD }));
  const { key } = item;
  if (key !== undefined && key !== null && typeof key !== 'string')
    details.push({ path: itemPath(index, 'key'), message: mustBeOfType(['string', 'null']) });
  else if (typeof key === 'string' && !KEY.test(key)) details.push({ path: itemPath(index, 'key'), message: ITEM_KEY_RULE.message });
  return details;
}

function duplicateKeys(items: readonly unknown[]): ErrorDetail[] {
  const first = new Map<string, number>();
  const details: ErrorDetail[] = [];
  items.forEach((item, index) => {
    const key = isObject(item) && typeof item.key === 'string' ? item.key : undefined;
    if (key === undefined) return;
    const seen = first.get(key);
    if (seen === undefined) first.set(key, index);
    else details.push({ path: itemPath(index, 'key'), message: `repeats the key of ${itemPath(seen)}` });
  });
  return details;
}

export function listShapeProblems(body: unknown, shape: ListShape): ErrorDetail[] {
  if (!isObject(body)) return [{ path: '(body)', message: mustBeOfType(['object']) }];
  const allowed = ['items', ...(shape.otherFields ?? [])];
  const details = Object.keys(body)
    .filter((field) => !allowed.includes(field))
    .map((field) => ({ path: field, message: UNKNOWN_FIELD }));
  const { items } = body;
  if (items === undefined) return [...details, { path: 'items', message: REQUIRED }];
  if (!Array.isArray(items)) return [...details, { path: 'items', message: mustBeOfType(['array']) }];
  if (items.length === 0) details.push({ path: 'items', message: 'must hold at least 1 item' });
  if (items.length > shape.max) return [...details, { path: 'items', message: atMostItems(shape.max) }];
  return [...details, ...items.flatMap(itemShapeProblems), ...duplicateKeys(items)];
}

export const LIST_INVALID = 'The list is invalid; nothing was traced or charged.';

/** One 422 naming every failing path, so a caller fixes the list in one go. */
export function checkListShape(body: unknown, shape: ListShape): ListItemInput[] {
  const details = listShapeProblems(body, shape);
  if (details.length) throw badInput(LIST_INVALID, details);
  return (body as { items: ListItemInput[] }).items;
}

/** A job's JSON actor did not come through the schema's types. */
function actorShapeProblems(actor: unknown): ErrorDetail[] {
  if (actor === undefined || actor === null) return [];
  if (!isObject(actor)) return [{ path: 'actor', message: mustBeOfType(['object', 'null']) }];
  const details = Object.keys(actor)
    .filter((field) => !['type', 'firstName', 'lastName', 'name'].includes(field))
    .map((field) => ({ path: `actor.${field}`, message: UNKNOWN_FIELD }));
  if (!(ACTOR_TYPES as readonly unknown[]).includes(actor.type)) details.push({ path: 'actor.type', message: mustBeOneOf(ACTOR_TYPES) });
  return details;
}

/** The 422 it throws becomes the item's result, not the list's. */
export function checkItem(item: ListItemInput): ValidTrace {
  const details = actorShapeProblems(item.actor);
  if (details.length) throw new AppError('invalid_request', 'The skip trace request is invalid.', details);
  return checkTraceInput({ address: item.address, actor: item.actor });
}
