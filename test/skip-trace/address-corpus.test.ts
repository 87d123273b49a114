/**
 * Scores the standardizer on the address corpus (address-corpus.data.ts): every group of
 * spellings of one address must give one key, and every collision probe (two different
 * addresses) two keys. The figures are printed, then asserted.
 */
import { describe, expect, it } from 'vitest';
import { addressKey, standardizeAddress, traceCacheKey, type AddressInput } from '../../src/address/index.js';
import { COLLISION_PROBES, CORPUS_GROUPS, type CorpusGroup } from './address-corpus.data.js';

const traceKey = (a: AddressInput): string => traceCacheKey(standardizeAddress(a), null);

/** How a group's variants standardized, for a failure message that shows where they part. */
const explain = (g: CorpusGroup): string =>
  `${g.name}:\n${g.variants
    .map((v) => {
      const s = standardizeAddress(v);
      return `  ${JSON.stringify(v)} → ${s.line1} | ${s.city} ${s.state} ${s.zip5}`;
    })
    .join('\n')}`;

const variantCount = CORPUS_GROUPS.reduce((n, g) => n + g.variants.length, 0);
const disagreeing = CORPUS_GROUPS.filter((g) => new Set(g.variants.map(traceKey)).size !== 1);
const merged = COLLISION_PROBES.filter((p) => traceKey(p.a) === traceKey(p.b));

describe('address corpus', () => {
  it('scores', () => {
    console.log(
      `address corpus: ${CORPUS_GROUPS.length - disagreeing.length}/${CORPUS_GROUPS.length} groups agree (${variantCount} variants), ` +
        `${merged.length}/${COLLISION_PROBES.length} collision probes merged`,
    );
    expect(variantCount).toBeGreaterThanOrEqual(500);
    expect(COLLISION_PROBES.length).toBeGreaterThanOrEqual(80);
  });

  it('gives every spelling in a group one key', () => {
    expect(disagreeing.map(explain)).toEqual([]);
  });

  it('never gives two addresses of a collision probe one key', () => {
    expect(merged.map((p) => `${p.name}: ${standardizeAddress(p.a).line1} / ${standardizeAddress(p.b).line1}`)).toEqual([]);
  });

  it('gives every group a key of its own: the groups are all different addresses', () => {
    const owners = new Map<string, string>();
    const shared = CORPUS_GROUPS.flatMap((g) => {
      const key = traceKey(g.variants[0]);
      const other = owners.get(key);
      owners.set(key, g.name);
      return other === undefined ? [] : [`${other} = ${g.name}`];
    });
    expect(shared).toEqual([]);
  });

  it('keys a property record the same way: one address key per group, different for each probe', () => {
    const recordKey = (a: AddressInput) => addressKey(standardizeAddress(a));
    expect(CORPUS_GROUPS.filter((g) => new Set(g.variants.map(recordKey)).size !== 1).map((g) => g.name)).toEqual([]);
    expect(COLLISION_PROBES.filter((p) => recordKey(p.a) === recordKey(p.b)).map((p) => p.name)).toEqual([]);
  });
});
