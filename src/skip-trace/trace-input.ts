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

/** Every failing path at once; a REST body (`metSchema`) meets only the rules its schema cannot state. */
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
