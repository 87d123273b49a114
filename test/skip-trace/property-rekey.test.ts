/**
 * The address identity migration, run on a database that holds property records imported under
 * the first address key: every record stays traceable under any spelling, two rows that are now
 * one address merge without losing an owner, and the stored keys are the ones an import now
 * writes. Runs on PostgreSQL (a database of its own) with DATABASE_URL, else on PGlite.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openScratchDatabase } from '../support/scratch-database.js';
import { addressKey, standardizeAddress, type AddressInput } from '../../src/address/index.js';
import { UnresolvableAddressError } from '../../src/skip-trace/providers/provider.js';
import { createRecordsProvider } from '../../src/skip-trace/providers/records-provider.js';
import { rekeyPropertyRecords } from '../../src/property-records/property-rekey.js';

const BEFORE_REKEY = 'Migration20261123000200_skip_trace';

/**
 * Rows as imports stored them before the change: standardized columns and the first key, which
 * that code computed for these addresses (it gave `10 PARK PL FL 4` and `10 PARK PL STE 4` one key).
 */
const OLD_ROWS = [
  {
    owner: 'FortyTwoOld',
    updatedAt: '2026-01-01',
    key: '01ce88f8b4bc08e57ab36cf53d5416d0cc55e84e9b81bd9e89d62e0cfb5442e5',
    line1: '200 W 42 ST',
    city: 'NEW YORK',
    state: 'NY',
    zip5: '10036',
  },
  {
    owner: 'FortyTwoNew',
    updatedAt: '2026-02-01',
    key: '1d4a0ce7b92ff7a43606542947fbfc72308125ce2f8b06ad9bff3b391e0cf754',
    line1: '200 W 42ND ST',
    city: 'NEW YORK',
    state: 'NY',
    zip5: '10036',
  },
  {
    owner: 'Rural',
    updatedAt: '2026-01-01',
    key: '71c4faf0d10d51a77dfa35957d6dab5ed21340d975b384f42c3b10c9d66ed44c',
    line1: 'RR2 BOX 45',
    city: 'HILLSBORO',
    state: 'WV',
    zip5: '24946',
  },
  {
    owner: 'Floor',
    updatedAt: '2026-01-01',
    key: '7a77a45b6e3cb15fb3dec69f25a53afbb75e461757497cc57cdff4479fde1846',
    line1: '10 PARK PL FL 4',
    city: 'AUSTIN',
    state: 'TX',
    zip5: '78701',
  },
  {
    owner: 'Tower',
    updatedAt: '2026-01-01',
    key: '7333bc051b22c7c89defa7c7cc63975439a9e2faa2d8fd0f96a4e837ef14f5d9',
    line1: '350 5TH AVE 28TH FLOOR',
    city: 'NEW YORK',
    state: 'NY',
    zip5: '10118',
  },
  {
    owner: 'Apartment',
    updatedAt: '2026-01-01',
    key: 'cee2dea298d2932e310f6de6390816e2868ea13d739c49865e49295160869166',
    line1: '123 MAIN ST APT 4',
    city: 'AUSTIN',
    state: 'TX',
    zip5: '78701',
  },
  {
    owner: 'Contract',
    updatedAt: '2026-01-01',
    key: '1d462888a405f6bf47ec10f79ffbe0bf9a079a3af98fa5d4ea30124304e31d22',
    line1: 'HIGHWAY CONTRACT 1 BOX 12',
    city: 'ELY',
    state: 'NV',
    zip5: '89301',
  },
];

/** A database migrated up to just before the re-keying, and how to get rid of it. */
const openBeforeRekey = () => openScratchDatabase(BEFORE_REKEY, 'rekey');

let database: Awaited<ReturnType<typeof openBeforeRekey>>;
const execute = (sql: string, params: unknown[] = []) => database.db.orm.em.fork().execute(sql, params);

beforeAll(async () => {
  database = await openBeforeRekey();
  for (const row of OLD_ROWS) {
    const [property, owner] = [randomUUID(), randomUUID()];
    await execute(`insert into properties (id, address_key, line1, city, state, zip5, updated_at) values (?, ?, ?, ?, ?, ?, ?)`, [
      property,
      row.key,
      row.line1,
      row.city,
      row.state,
      row.zip5,
      row.updatedAt,
    ]);
    await execute(`insert into property_owners (id, property_id, position, type) values (?, ?, 0, 'person')`, [owner, property]);
    await execute(`insert into property_persons (id, owner_id, position, first_name, first_key) values (?, ?, 0, ?, ?)`, [
      randomUUID(),
      owner,
      row.owner,
      row.owner.toUpperCase(),
    ]);
  }
  await database.db.orm.migrator.up();
});
afterAll(() => database?.drop());

/** Owners' first names at an address, or null when no property is stored there. */
async function ownersAt(address: AddressInput): Promise<string[] | null> {
  try {
    const result = await createRecordsProvider(database.db.sql).trace({
      requestId: randomUUID(),
      address: standardizeAddress(address),
      actor: null,
    });
    return result.persons.map((p) => p.firstName ?? '');
  } catch (error) {
    if (error instanceof UnresolvableAddressError) return null;
    throw error;
  }
}

describe('address identity migration', () => {
  it('keeps every record imported under the first key traceable, under the spellings that are now one address', async () => {
    expect(await ownersAt({ line1: 'RR 2 Box 45', city: 'Hillsboro', state: 'WV', zip: '24946' })).toEqual(['Rural']);
    expect(await ownersAt({ line1: 'Rural Route 2 Box 45', city: 'Hillsboro', state: 'WV', zip: '24946' })).toEqual(['Rural']);
    expect(await ownersAt({ line1: '10 Park Place', line2: 'Floor 4', city: 'Austin', state: 'TX', zip: '78701' })).toEqual(['Floor']);
    expect(await ownersAt({ line1: '350 Fifth Ave', city: 'New York', state: 'NY', zip: '10118' })).toBeNull();
    expect(await ownersAt({ line1: '350 5th Avenue Floor 28', city: 'New York', state: 'NY', zip: '10118' })).toEqual(['Tower']);
    expect(await ownersAt({ line1: '123 Main Street #4', city: 'Austin', state: 'TX', zip: '78701-1234' })).toEqual(['Apartment']);
    expect(await ownersAt({ line1: 'HC1 Box 12', city: 'Ely', state: 'NV', zip: '89301' })).toEqual(['Contract']);
  });

  it('no longer finds a record under a unit it was merged with by the first key', async () => {
    expect(await ownersAt({ line1: '10 Park Pl Ste 4', city: 'Austin', state: 'TX', zip: '78701' })).toBeNull();
  });

  it('merges rows that are now one address into the newest, keeping the owners of both', async () => {
    expect(await ownersAt({ line1: '200 W 42 St', city: 'New York', state: 'NY', zip: '10036' })).toEqual(['FortyTwoNew', 'FortyTwoOld']);
    const [counts] = await execute(
      `select (select count(*) from properties)::int as properties, (select count(*) from property_owners)::int as owners`,
    );
    expect(counts).toEqual({ properties: OLD_ROWS.length - 1, owners: OLD_ROWS.length });
  });

  it('stores the key and columns an import now writes', async () => {
    const rows = await execute(`select address_key, line1, city, state, zip5 from properties order by line1`);
    for (const row of rows) {
      const address = standardizeAddress({ line1: row.line1, city: row.city, state: row.state, zip: row.zip5 });
      expect(row, row.line1).toEqual({
        address_key: addressKey(address),
        line1: address.line1,
        city: address.city,
        state: address.state,
        zip5: address.zip5,
      });
    }
    expect(rows.map((r) => r.line1)).toContain('200 W 42ND ST');
    expect(rows.map((r) => r.line1)).toContain('RR 2 BOX 45');
  });

  it('is a no-op when run again (a later identity change reuses it)', async () => {
    const snapshot = () =>
      execute(
        `select p.id, p.address_key, p.line1, o.id as owner, o.position from properties p join property_owners o on o.property_id = p.id order by o.id`,
      );
    const before = await snapshot();
    const result = await database.db.orm.em.fork().transactional((em) => rekeyPropertyRecords((sql, params) => em.execute(sql, params)));
    expect(result).toEqual({ properties: OLD_ROWS.length - 1, merged: 0 });
    expect(await snapshot()).toEqual(before);
  });
});
