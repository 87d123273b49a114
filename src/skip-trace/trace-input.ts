import { normalizeActor, normalizeEntityName, normalizePersonNamePart, standardizeAddress, traceCacheKey, type NormalizedActor, type StandardAddress } from './address/index.js';
import { badInput, type ErrorDetail } from '../common/errors.js';
import { ADDRESS_FIELD_MAX_LENGTH, validateAddressInput } from './skip-trace.types.js';

export interface SkipTraceInput {
  address: { line1: string; line2?: string | null; city: string; state: string; zip: string };
  actor?: { type: 'person' | 'entity'; firstName?: string | null; lastName?: string | null; name?: string | null } | null;
}

export interface ValidTrace {
  address: StandardAddress;
  actor: NormalizedActor | null;
  cacheKey: string;
}

/**
 * Contract section 4's actor rules: person-only and entity-only fields, bounded lengths, and an
 * actor always narrows: an entity needs a name, a person a first or last name, that still holds a
 * letter or digit once folded (`".,"` does not). Otherwise the trace would silently run by address alone.
 */
function validateActor(actor: NonNullable<SkipTraceInput['actor']>): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const onlyFor = actor.type === 'person' ? ['name'] : ['firstName', 'lastName'];
  for (const field of onlyFor) {
    if (actor[field as keyof typeof actor] != null) details.push({ path: `actor.${field}`, message: `is allowed only with type "${actor.type === 'person' ? 'entity' : 'person'}"` });
  }
  for (const field of ['firstName', 'lastName', 'name'] as const) {
    if ((actor[field]?.length ?? 0) > ADDRESS_FIELD_MAX_LENGTH) details.push({ path: `actor.${field}`, message: `must be at most ${ADDRESS_FIELD_MAX_LENGTH} characters` });
  }
  if (actor.type === 'entity' && normalizeEntityName(actor.name ?? '') === '') {
    details.push({ path: 'actor.name', message: 'is required for an entity and must contain letters or digits' });
  }
  if (actor.type === 'person' && normalizePersonNamePart(actor.firstName ?? '') === '' && normalizePersonNamePart(actor.lastName ?? '') === '') {
    for (const field of ['firstName', 'lastName']) details.push({ path: `actor.${field}`, message: 'a person needs firstName or lastName with letters or digits' });
  }
  return details;
}

/** Validates a trace request (every failing path at once), then standardizes it and derives the cache key. */
export function validateTraceInput(input: SkipTraceInput): ValidTrace {
  const details = [...validateAddressInput(input.address, 'address'), ...(input.actor ? validateActor(input.actor) : [])];
  if (details.length) throw badInput('The skip trace request is invalid.', details);

  const { actor } = input;
  const address = standardizeAddress({ ...input.address, state: input.address.state.trim().toUpperCase() });
  const normalized = normalizeActor(actor ? (actor.type === 'person' ? { type: 'person', firstName: actor.firstName, lastName: actor.lastName } : { type: 'entity', name: actor.name }) : null);
  return { address, actor: normalized, cacheKey: traceCacheKey(address, normalized) };
}
