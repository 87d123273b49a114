/**
 * A trace's address and actor rules, stated once so the JSON Schema form, the resolver and the
 * property-record importer refuse alike, in the same words.
 */
import { atMostCharacters, mustBeOfType, REQUIRED, UNKNOWN_FIELD } from '../common/detail-messages.js';
import type { ErrorDetail } from '../common/errors.js';
import { NUL_DETAIL } from '../common/nul.js';
import type { ConstraintMessages } from '../schema/constraints.js';
import { normalizeEntityName, normalizePersonNamePart, standardizeState } from '../address/index.js';

/** Sorted as the printed schema sorts them, so every message lists them alike. */
export const ACTOR_TYPES = ['entity', 'person'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

export const TEXT_MAX_LENGTH = 200;
const ZIP_PATTERN = /^\d{5}(-?\d{4})?$/u;

/** Listed here because `standardizeState` passes unknown letters through: it cannot tell a code from a typo. */
const USPS_STATE_CODES: readonly string[] = (
  'AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND ' +
  'OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY AS GU MP PR VI FM MH PW AA AE AP'
).split(' ');
const STATE_CODES = new Set(USPS_STATE_CODES);

function isUspsStateCode(state: string): boolean {
  const trimmed = state.trim();
  return /^[A-Za-z]{2}$/u.test(trimmed) && STATE_CODES.has(standardizeState(trimmed));
}

export const RULE_MESSAGES = {
  blank: 'must not be blank',
  tooLong: atMostCharacters(TEXT_MAX_LENGTH),
  state: `must be a two-letter USPS state code, in any case: ${USPS_STATE_CODES.join(', ')}`,
  zip: 'must be 5 or 9 digits (12345, 12345-6789 or 123456789)',
  entityName: 'is required for an entity and must contain letters or digits',
  personName: 'a person needs firstName or lastName with letters or digits',
  onlyWithType: (type: ActorType) => `is allowed only with type ${type}`,
} as const;

/** `messages` only where a keyword's generic wording would not say the rule. */
export interface FieldConstraint {
  keywords: Record<string, unknown>;
  messages?: ConstraintMessages;
}

/**
 * JSON Schema cannot say "not blank" or "a USPS code": the schema form refuses what it can with the
 * rule's message, and `problem` the rest, in the same words.
 */
export interface FieldRule extends FieldConstraint {
  required: boolean;
  problem(value: string): string | undefined;
  /** False when the schema form states all of `problem`; not a length: JSON Schema counts code points, the rule UTF-16 units. */
  beyondSchema: boolean;
}

const requiredText = {
  required: true,
  keywords: { minLength: 1, maxLength: TEXT_MAX_LENGTH },
  messages: { minLength: RULE_MESSAGES.blank },
  problem: (value: string) =>
    value.trim() === '' ? RULE_MESSAGES.blank : value.length > TEXT_MAX_LENGTH ? RULE_MESSAGES.tooLong : undefined,
  beyondSchema: true,
} as const satisfies FieldRule;

export const OPTIONAL_TEXT = {
  required: false,
  keywords: { maxLength: TEXT_MAX_LENGTH },
  problem: (value: string) => (value.length > TEXT_MAX_LENGTH ? RULE_MESSAGES.tooLong : undefined),
  beyondSchema: true,
} as const satisfies FieldRule;

/** In the order their problems are reported. */
export const ADDRESS_RULES = {
  line1: requiredText,
  line2: OPTIONAL_TEXT,
  city: requiredText,
  state: {
    required: true,
    keywords: { minLength: 2, maxLength: 2 },
    messages: { minLength: RULE_MESSAGES.state, maxLength: RULE_MESSAGES.state },
    problem: (value: string) => (isUspsStateCode(value) ? undefined : RULE_MESSAGES.state),
    beyondSchema: true,
  },
  zip: {
    required: true,
    keywords: { pattern: ZIP_PATTERN.source },
    messages: { pattern: RULE_MESSAGES.zip },
    problem: (value: string) => (ZIP_PATTERN.test(value.trim()) ? undefined : RULE_MESSAGES.zip),
    beyondSchema: false,
  },
} as const satisfies Record<string, FieldRule>;

const ADDRESS_FIELDS = Object.keys(ADDRESS_RULES);

/** A required field may be neither missing nor null (a type error, as JSON Schema words it). */
function text(details: ErrorDetail[], value: unknown, path: string, required: boolean): string | undefined {
  if (value === undefined && required) details.push({ path, message: REQUIRED });
  else if (value === undefined || (value === null && !required)) return undefined;
  else if (typeof value !== 'string') details.push({ path, message: mustBeOfType(required ? ['string'] : ['string', 'null']) });
  else if (value.includes('\u0000')) details.push({ path, message: NUL_DETAIL });
  else return value;
  return undefined;
}

/** Null when absent or blank, undefined when refused. A trace counts the length as given, an import trimmed. */
export function checkOptionalText(
  details: ErrorDetail[],
  value: unknown,
  path: string,
  limit: { max: number; of: 'as given' | 'trimmed' },
): string | null | undefined {
  const given = text(details, value, path, false);
  if (given === undefined) return value === undefined || value === null ? null : undefined;
  if ((limit.of === 'trimmed' ? given.trim() : given).length > limit.max) {
    details.push({ path, message: atMostCharacters(limit.max) });
    return undefined;
  }
  return given.trim() === '' ? null : given.trim();
}

export const isEntityName = (name: string | null | undefined): boolean => normalizeEntityName(name ?? '') !== '';

/** Takes any value, as imported records arrive untyped; `metSchema` (a REST body) checks only what the schema cannot. */
export function checkAddress(value: unknown, path: string, metSchema = false): ErrorDetail[] {
  if (metSchema) return rulesBeyondSchema(value as Record<string, unknown>, path);
  if (value === undefined) return [{ path, message: REQUIRED }];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [{ path, message: mustBeOfType(['object']) }];
  const address = value as Record<string, unknown>;
  const details: ErrorDetail[] = [];
  for (const [field, rule] of Object.entries(ADDRESS_RULES) as [string, FieldRule][]) {
    const fieldText = text(details, address[field], `${path}.${field}`, rule.required);
    const problem = fieldText === undefined ? undefined : rule.problem(fieldText);
    if (problem) details.push({ path: `${path}.${field}`, message: problem });
  }
  for (const key of Object.keys(address)) {
    if (!ADDRESS_FIELDS.includes(key)) details.push({ path: `${path}.${key}`, message: UNKNOWN_FIELD });
  }
  return details;
}

function rulesBeyondSchema(address: Record<string, unknown>, path: string): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const [field, rule] of Object.entries(ADDRESS_RULES) as [string, FieldRule][]) {
    const value = address[field];
    const problem = rule.beyondSchema && typeof value === 'string' ? rule.problem(value) : undefined;
    if (problem) details.push({ path: `${path}.${field}`, message: problem });
  }
  return details;
}

export interface TraceActorInput {
  type: ActorType;
  firstName?: string | null;
  lastName?: string | null;
  name?: string | null;
}

const ACTOR_NAME_FIELDS = { person: ['firstName', 'lastName'], entity: ['name'] } as const;

/** An actor must narrow the trace; otherwise it would silently run by address alone. */
export function checkActor(actor: TraceActorInput, path: string, metSchema = false): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const other: ActorType = actor.type === 'person' ? 'entity' : 'person';
  for (const field of ACTOR_NAME_FIELDS[other]) {
    if (actor[field] != null) details.push({ path: `${path}.${field}`, message: RULE_MESSAGES.onlyWithType(other) });
  }
  for (const field of ['firstName', 'lastName', 'name'] as const) {
    const value = actor[field];
    // Past the schema, only the length is left to check (UTF-16 units).
    const problem = metSchema && typeof value === 'string' ? OPTIONAL_TEXT.problem(value) : undefined;
    if (problem) details.push({ path: `${path}.${field}`, message: problem });
    else if (!metSchema) checkOptionalText(details, value, `${path}.${field}`, { max: TEXT_MAX_LENGTH, of: 'as given' });
  }
  if (actor.type === 'entity' && !isEntityName(actor.name)) details.push({ path: `${path}.name`, message: RULE_MESSAGES.entityName });
  if (
    actor.type === 'person' &&
    normalizePersonNamePart(actor.firstName ?? '') === '' &&
    normalizePersonNamePart(actor.lastName ?? '') === ''
  ) {
    for (const field of ACTOR_NAME_FIELDS.person) details.push({ path: `${path}.${field}`, message: RULE_MESSAGES.personName });
  }
  return details;
}
