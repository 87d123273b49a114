/**
 * GraphQL types shared by the `skipTrace` mutation and `importPropertyRecords`, and the address
 * rules (contract section 4) both enforce. The `extensions.constraints` below are the same rules
 * as JSON Schema keywords, read by the gateway's discovery documents.
 */
import { builder } from '../graphql/builder.js';
import { constraints } from '../graphql/constraints.js';
import type { ErrorDetail } from '../common/errors.js';
import { standardizeState } from './address/index.js';
import { PHONE_TYPES } from './providers/provider.js';

export const ACTOR_TYPES = ['person', 'entity'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

export const ADDRESS_FIELD_MAX_LENGTH = 200;
export const ZIP_PATTERN = /^\d{5}(-?\d{4})?$/u;

export const ActorTypeEnum = builder.enumType('ActorType', {
  description: 'Whether an actor or an owner is a person or an entity (company, trust, LLC).',
  values: ACTOR_TYPES,
});

export const PhoneTypeEnum = builder.enumType('PhoneType', { values: PHONE_TYPES });

export const SkipTraceAddressInput = builder.inputType('SkipTraceAddressInput', {
  description: 'A US property address. Spellings are standardized (USPS Publication 28) before lookup.',
  fields: (t) => ({
    line1: t.string({ required: true, description: 'Street address.', ...constraints({ minLength: 1, maxLength: ADDRESS_FIELD_MAX_LENGTH }) }),
    line2: t.string({ description: 'Apartment, unit, suite.', ...constraints({ maxLength: ADDRESS_FIELD_MAX_LENGTH }) }),
    city: t.string({ required: true, ...constraints({ minLength: 1, maxLength: ADDRESS_FIELD_MAX_LENGTH }) }),
    state: t.string({ required: true, description: 'Two-letter USPS code, any case.', ...constraints({ minLength: 2, maxLength: 2 }) }),
    zip: t.string({ required: true, description: 'Five or nine digits: 78701, 78701-1234 or 787011234.', ...constraints({ pattern: ZIP_PATTERN.source }) }),
  }),
});

/**
 * USPS codes of the states, DC, the territories, the freely associated states and the military
 * "states" of APO/FPO/DPO addresses that the address module standardizes (`standardizeState`
 * passes unknown letters through, so it cannot tell a code from a typo).
 */
const USPS_STATE_CODES = new Set(
  ('AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND ' +
    'OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY AS GU MP PR VI FM MH PW AA AE AP').split(' '),
);

export function isUspsStateCode(state: string): boolean {
  const trimmed = state.trim();
  return /^[A-Za-z]{2}$/u.test(trimmed) && USPS_STATE_CODES.has(standardizeState(trimmed));
}

/**
 * Checks an address against contract section 4 (the resolvers enforce what the constraints
 * declare; /graphql callers skip the gateway's JSON Schema check). Accepts anything, since
 * imported records arrive from JSON and CSV too. `path` prefixes each detail, e.g. `input.3.address`.
 */
export function validateAddressInput(value: unknown, path: string): ErrorDetail[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [{ path, message: 'must be an object' }];
  const a = value as Record<string, unknown>;
  const details: ErrorDetail[] = [];
  const text = (field: string, required: boolean): string | undefined => {
    const v = a[field];
    if (v === undefined || v === null) {
      if (required) details.push({ path: `${path}.${field}`, message: 'is required' });
      return undefined;
    }
    if (typeof v !== 'string') details.push({ path: `${path}.${field}`, message: 'must be a string' });
    else if (v.includes('\u0000')) details.push({ path: `${path}.${field}`, message: 'must not contain U+0000' });
    else return v;
    return undefined;
  };
  for (const field of ['line1', 'line2', 'city']) {
    const v = text(field, field !== 'line2');
    if (v === undefined) continue;
    if (field !== 'line2' && v.trim() === '') details.push({ path: `${path}.${field}`, message: 'must not be blank' });
    else if (v.length > ADDRESS_FIELD_MAX_LENGTH) details.push({ path: `${path}.${field}`, message: `must be at most ${ADDRESS_FIELD_MAX_LENGTH} characters` });
  }
  const state = text('state', true);
  if (state !== undefined && !isUspsStateCode(state)) details.push({ path: `${path}.state`, message: 'must be a two-letter USPS state code' });
  const zip = text('zip', true);
  if (zip !== undefined && !ZIP_PATTERN.test(zip.trim())) details.push({ path: `${path}.zip`, message: 'must be 5 or 9 digits (12345, 12345-6789 or 123456789)' });
  for (const key of Object.keys(a)) {
    if (!['line1', 'line2', 'city', 'state', 'zip'].includes(key)) details.push({ path: `${path}.${key}`, message: 'is not a known field' });
  }
  return details;
}
