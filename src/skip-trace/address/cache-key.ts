/** Cache key for skip-trace results: one key per standardized address and traced actor. */
import { createHash } from 'node:crypto';
import type { NormalizedActor } from './actor.js';
import { designatorRequiresRange, unitDesignator } from './lexicon.js';
import type { StandardAddress } from './standardize.js';

/** Bump when the key's inputs or the standardization rules change, so stale entries are not reused. */
const KEY_VERSION = 1;

type Json = string | number | boolean | null | readonly Json[] | { readonly [key: string]: Json };

/**
 * SHA-256 hex of a canonical JSON of the address (without the unit designator word, so
 * `APT 4`, `# 4` and `UNIT 4` share a key; without ZIP+4, which is often missing) and the actor.
 */
export function traceCacheKey(address: StandardAddress, actor: NormalizedActor | null): string {
  const payload: Json = {
    v: KEY_VERSION,
    address: {
      primaryNumber: address.primaryNumber,
      preDirectional: address.preDirectional,
      streetName: address.streetName,
      suffix: address.suffix,
      postDirectional: address.postDirectional,
      unit: unitKey(address.unitDesignator, address.unitNumber),
      city: address.city,
      state: address.state,
      zip5: address.zip5,
    },
    actor: actorPayload(actor),
  };
  return createHash('sha256').update(canonicalJson(payload)).digest('hex');
}

/**
 * The unit's identifying words: designators that need a number (APT, STE, UNIT, #) are dropped
 * since they only label the number; standalone ones (REAR, BSMT, PH) are kept since they are
 * the identity of the unit. `BLDG C APT 4` → `C 4`, `REAR` → `REAR`.
 */
function unitKey(designator: string | null, number: string | null): string | null {
  const ws = [designator ?? '', ...(number ?? '').split(' ')].filter((w) => w !== '');
  const identifying = ws.filter((w) => w !== '#' && !(unitDesignator(w) !== undefined && designatorRequiresRange(w)));
  return identifying.length > 0 ? identifying.join(' ') : null;
}

/** Picks the actor's fields explicitly so stray properties on the object cannot change the key. */
function actorPayload(actor: NormalizedActor | null): Json {
  if (actor === null) return null;
  return actor.type === 'person'
    ? { type: 'person', firstName: actor.firstName, lastName: actor.lastName }
    : { type: 'entity', name: actor.name };
}

/** JSON with object keys sorted at every level, so the hash does not depend on property order. */
function canonicalJson(value: Json): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as { readonly [key: string]: Json }).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
