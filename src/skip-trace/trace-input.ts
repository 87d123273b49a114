import { normalizeActor, standardizeAddress, traceCacheKey, type NormalizedActor, type StandardAddress } from '../address/index.js';
import { badInput } from '../common/errors.js';
import { checkActor, checkAddress, type TraceActorInput } from './input-rules.js';

export interface SkipTraceInput {
  address: { line1: string; line2?: string | null; city: string; state: string; zip: string };
  actor?: TraceActorInput | null;
}

export interface ValidTrace {
  address: StandardAddress;
  actor: NormalizedActor | null;
  cacheKey: string;
}

/**
 * Checks a trace request against the address and actor rules (every failing path at once), in the
 * same words whichever way it came: `/graphql` callers meet them all here; a REST body met their
 * JSON Schema form already (`metSchema`), so only the rules that form does not state are left.
 * Then standardizes it and derives the cache key.
 */
export function checkTraceInput(input: SkipTraceInput, metSchema = false): ValidTrace {
  const details = [
    ...checkAddress(input.address, 'address', metSchema),
    ...(input.actor ? checkActor(input.actor, 'actor', metSchema) : []),
  ];
  if (details.length) throw badInput('The skip trace request is invalid.', details);

  const { actor } = input;
  const address = standardizeAddress({ ...input.address, state: input.address.state.trim().toUpperCase() });
  const normalized = normalizeActor(
    actor
      ? actor.type === 'person'
        ? { type: 'person', firstName: actor.firstName, lastName: actor.lastName }
        : { type: 'entity', name: actor.name }
      : null,
  );
  return { address, actor: normalized, cacheKey: traceCacheKey(address, normalized) };
}
