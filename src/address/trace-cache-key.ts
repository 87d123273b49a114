import type { NormalizedActor } from './actor.js';
import { canonicalHash, type Json } from '../common/canonical-hash.js';
import { addressKey } from './address-identity.js';
import type { StandardAddress } from './standardize.js';

/** Bump when the inputs or standardization change; older entries are then never read and expire. */
const KEY_VERSION = 2;

export function traceCacheKey(address: StandardAddress, actor: NormalizedActor | null): string {
  return canonicalHash({ v: KEY_VERSION, address: addressKey(address), actor: actorPayload(actor) });
}

/** Explicit fields, so stray properties on the object cannot change the key. */
function actorPayload(actor: NormalizedActor | null): Json {
  if (actor === null) return null;
  return actor.type === 'person'
    ? { type: 'person', firstName: actor.firstName, lastName: actor.lastName }
    : { type: 'entity', name: actor.name };
}
