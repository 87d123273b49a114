/** Address standardization (USPS Pub 28), address identity, actor normalization and the skip-trace cache key. */
export { standardizeAddress, standardizeCity, standardizeState, standardizeZip } from './standardize.js';
export type { AddressInput, StandardAddress } from './standardize.js';
export { addressIdentity, addressKey, ADDRESS_KEY_VERSION } from './address-identity.js';
export type { AddressIdentity } from './address-identity.js';
export { normalizeActor, normalizeEntityName, normalizePersonNamePart } from './actor.js';
export type { ActorInput, NormalizedActor } from './actor.js';
export { traceCacheKey } from './trace-cache-key.js';
