/** Cache key for skip-trace results: one key per address identity and traced actor. */
import type { NormalizedActor } from './actor.js';
import { canonicalHash, type Json } from '../common/canonical-hash.js';
import { addressKey } from './address-identity.js';
import type { StandardAddress } from './standardize.js';

/**
 * Bump when the key's inputs or the standardization rules change, so stale entries are not
 * reused: cached traces under an older version are simply never read again and expire.
 */
const KEY_VERSION = 2;

/** SHA-256 hex of the address key (address-identity.ts) and the normalized actor. */
export function traceCacheKey(address: StandardAddress, actor: NormalizedActor | null): string {
  return canonicalHash({ v: KEY_VERSION, address: addressKey(address), actor: actorPayload(actor) });
}

/** Picks the actor's fields explicitly so stray properties on the object cannot change the key. */
function actorPayload(actor: NormalizedActor | null): Json {
  if (actor === null) return null;
  return actor.type === 'person'
    ? { type: 'person', firstName: actor.firstName, lastName: actor.lastName }
    : { type: 'entity', name: actor.name };
}
