/** Property records and skip-trace cache keys both build on `addressKey`, so they agree on which spellings are one address. */
import { canonicalHash } from '../common/canonical-hash.js';
import { INTERCHANGEABLE_DESIGNATORS } from './pub28-tables.js';
import type { StandardAddress } from './standardize.js';

/** Bump when the identity or standardization changes, with a migration re-keying stored keys (see Migration20261124000000_address_identity). */
export const ADDRESS_KEY_VERSION = 2;

/** Everything but ZIP+4, which is often missing. */
export type AddressIdentity = {
  primaryNumber: string | null;
  preDirectional: string | null;
  streetName: string | null;
  suffix: string | null;
  postDirectional: string | null;
  /** `APT`, `UNIT` and `#` fold to one designator. */
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

export function addressKey(a: StandardAddress): string {
  return canonicalHash({ v: ADDRESS_KEY_VERSION, address: addressIdentity(a) });
}

const [SAME_UNIT, ...SAME_UNIT_SPELLINGS] = INTERCHANGEABLE_DESIGNATORS;

/** Designators stay (`FL 4` is not `STE 4`); only the ones naming an apartment fold together. */
function unitIdentity(designator: string | null, number: string | null): string | null {
  const ws = [designator ?? '', ...(number ?? '').split(' ')].filter((w) => w !== '');
  return ws.length > 0 ? ws.map((w) => (SAME_UNIT_SPELLINGS.includes(w) ? SAME_UNIT : w)).join(' ') : null;
}
