/**
 * What makes two spellings one address. A property record is an address (`properties.address_key`
 * is `addressKey`); a skip-trace cache key is an address plus an actor, built on the same
 * `addressKey`, so records and traces cannot disagree about which spellings are one address.
 */
import { canonicalHash } from '../common/canonical-hash.js';
import { INTERCHANGEABLE_DESIGNATORS } from './pub28-tables.js';
import type { StandardAddress } from './standardize.js';

/**
 * Bump when the identity changes (fields, or the standardization rules). Stored property keys
 * must then be re-keyed by a migration, as Migration20261124000000_address_identity does.
 */
export const ADDRESS_KEY_VERSION = 2;

/** The standardized fields that tell addresses apart: everything but ZIP+4 (often missing). */
export type AddressIdentity = {
  primaryNumber: string | null;
  preDirectional: string | null;
  streetName: string | null;
  suffix: string | null;
  postDirectional: string | null;
  /** Designator and number, with `APT`, `UNIT` and `#` as one designator: `APT 4`, `STE 4`, `REAR`. */
  unit: string | null;
  city: string;
  state: string;
  zip5: string;
};

export function addressIdentity(a: StandardAddress): AddressIdentity {
  return {
    primaryNumber: a.primaryNumber,
    preDirectional: a.preDirectional,
    streetName: a.streetName,
    suffix: a.suffix,
    postDirectional: a.postDirectional,
    unit: unitIdentity(a.unitDesignator, a.unitNumber),
    city: a.city,
    state: a.state,
    zip5: a.zip5,
  };
}

/** SHA-256 hex of the address identity: the key of a property record. */
export function addressKey(a: StandardAddress): string {
  return canonicalHash({ v: ADDRESS_KEY_VERSION, address: addressIdentity(a) });
}

const [SAME_UNIT, ...SAME_UNIT_SPELLINGS] = INTERCHANGEABLE_DESIGNATORS;

/**
 * Every word of the unit is kept, designators included, since `FL 4`, `STE 4` and `APT 4` are
 * different units; only the designators that name one apartment fold together (`# 4` → `APT 4`,
 * `BLDG C UNIT 4` → `BLDG C APT 4`).
 */
function unitIdentity(designator: string | null, number: string | null): string | null {
  const ws = [designator ?? '', ...(number ?? '').split(' ')].filter((w) => w !== '');
  return ws.length > 0 ? ws.map((w) => (SAME_UNIT_SPELLINGS.includes(w) ? SAME_UNIT : w)).join(' ') : null;
}
