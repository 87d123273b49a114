import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeActor, standardizeAddress, type ActorInput, type AddressInput } from '../../src/address/index.js';
import { UnresolvableAddressError } from '../../src/skip-trace/providers/provider.js';
import { createRecordsProvider } from '../../src/skip-trace/providers/records-provider.js';
import { importPropertyRecords } from '../../src/property-records/property-records.import.js';
import { cliEnv, npmRun } from '../support/admin-cli.js';
import { startService, type TestService } from '../support/harness.js';

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

const IMPORT = `mutation($input: [PropertyRecordInput!]!) { importPropertyRecords(input: $input) { imported } }`;

/** Street names unique to this run: with DATABASE_URL the tables outlive the test. */
const street = () => `${Array.from(randomBytes(8), (b) => String.fromCharCode(97 + (b % 26))).join('')} Street`;
const austin = (line1: string, extra: Partial<AddressInput> = {}): AddressInput => ({
  line1,
  city: 'Austin',
  state: 'TX',
  zip: '78701',
  ...extra,
});

async function importRecords(input: unknown[]): Promise<number> {
  const result = await service.graphql(IMPORT, { input });
  if (!result.body.data) throw new Error(JSON.stringify(result.body.errors));
  return result.body.data.importPropertyRecords.imported;
}

const trace = (address: AddressInput, actor: ActorInput | null = null) =>
  createRecordsProvider(service.app.services.sql).trace({
    requestId: randomUUID(),
    address: standardizeAddress(address),
    actor: normalizeActor(actor),
  });

const names = (result: { persons: { firstName: string | null; lastName: string | null }[] }) =>
  result.persons.map((p) => `${p.firstName} ${p.lastName}`);

describe('importPropertyRecords', () => {
  it('imports person owners and an entity owner with its persons, storing phones as digits', async () => {
    const address = austin(`12 ${street()}`);
    const imported = await importRecords([
      {
        address,
        owners: [
          {
            type: 'person',
            firstName: 'John',
            lastName: "O'Brien",
            middleName: 'Q',
            age: 54,
            phones: [{ number: '(512) 555-0100', type: 'mobile' }, { number: '+1 512.555.0101' }],
            emails: ['john@example.com'],
          },
          {
            type: 'entity',
            name: 'Acme Holdings LLC',
            persons: [
              { firstName: 'Bob', lastName: 'Smith', phones: [{ number: '1-512-555-0102', type: 'residential' }] },
              { lastName: 'Lee' },
            ],
          },
        ],
      },
    ]);
    expect(imported).toBe(1);
    expect(await trace(address)).toEqual({
      status: 'records_found',
      persons: [
        {
          firstName: 'John',
          lastName: "O'Brien",
          middleName: 'Q',
          age: 54,
          phones: [
            { number: '5125550100', type: 'mobile' },
            { number: '5125550101', type: 'unknown' },
          ],
          emails: ['john@example.com'],
        },
        {
          firstName: 'Bob',
          lastName: 'Smith',
          middleName: null,
          age: null,
          phones: [{ number: '5125550102', type: 'residential' }],
          emails: [],
        },
        { firstName: null, lastName: 'Lee', middleName: null, age: null, phones: [], emails: [] },
      ],
    });
  });

  it('replaces the owners of an address imported again, under any spelling', async () => {
    const name = street();
    await importRecords([
      {
        address: austin(`7 ${name}`),
        owners: [
          { type: 'person', firstName: 'Old' },
          { type: 'entity', name: 'Old Co', persons: [{ firstName: 'Older' }] },
        ],
      },
    ]);
    await importRecords([
      {
        address: austin(`7 ${name.toUpperCase().replace('STREET', 'ST')}`, { zip: '78701-0001' }),
        owners: [{ type: 'person', firstName: 'New' }],
      },
    ]);
    expect(names(await trace(austin(`7 ${name}`)))).toEqual(['New null']);
    const [counts] = await service.sql<{ properties: number; owners: number; persons: number }>(
      `select count(distinct pr.id)::int as properties, count(distinct o.id)::int as owners, count(p.id)::int as persons
       from properties pr join property_owners o on o.property_id = pr.id join property_persons p on p.owner_id = o.id
       where pr.line1 = ?`,
      [`7 ${name.toUpperCase().replace('STREET', 'ST')}`],
    );
    expect(counts).toEqual({ properties: 1, owners: 1, persons: 1 });
  });

  it('keeps distinct units at one street address apart: importing one never replaces another', async () => {
    const name = street();
    const units = ['Apt 4', 'Fl 4', 'Ste 4', 'Lot 4', 'Rm 4', 'Bldg 4', 'Rear', 'PH'];
    const owner = (unit: string) => unit.replace(' ', '');
    await importRecords(
      units.map((unit) => ({ address: austin(`10 ${name} ${unit}`), owners: [{ type: 'person', firstName: owner(unit) }] })),
    );
    for (const unit of units) expect(names(await trace(austin(`10 ${name} ${unit}`))), unit).toEqual([`${owner(unit)} null`]);

    // "Unit 4" and "#4" are the apartment: re-importing it replaces only the apartment's owners.
    await importRecords([{ address: austin(`10 ${name}`, { line2: 'Unit 4' }), owners: [{ type: 'person', firstName: 'Unit4' }] }]);
    expect(names(await trace(austin(`10 ${name} #4`)))).toEqual(['Unit4 null']);
    expect(names(await trace(austin(`10 ${name} Floor 4`)))).toEqual(['Fl4 null']);
    expect(names(await trace(austin(`10 ${name} Suite 4`)))).toEqual(['Ste4 null']);
  });

  it('rejects invalid records as a whole with BAD_USER_INPUT and a detail per problem', async () => {
    const valid = austin(`1 ${street()}`);
    const result = await service.graphql(IMPORT, {
      input: [
        { address: valid, owners: [{ type: 'entity', firstName: 'Ann', persons: [] }] },
        {
          address: { line1: '  ', city: 'Austin', state: 'ZZ', zip: '7870' },
          owners: [{ type: 'person', name: 'Acme', age: -1, phones: [{ number: '555-12' }], emails: ['not-an-email'] }],
        },
      ],
    });
    const [error] = result.body.errors;
    expect(error.extensions.code).toBe('BAD_USER_INPUT');
    expect(error.extensions.details.map((d: { path: string }) => d.path).sort()).toEqual([
      'input.0.owners.0.firstName',
      'input.0.owners.0.name',
      'input.1.address.line1',
      'input.1.address.state',
      'input.1.address.zip',
      'input.1.owners.0.age',
      'input.1.owners.0.emails.0',
      'input.1.owners.0.name',
      'input.1.owners.0.phones.0.number',
    ]);
    await expect(trace(valid)).rejects.toThrow(UnresolvableAddressError);
  });

  it('rejects an entity owner whose name folds to nothing (".,", apostrophes, blanks), as a trace refuses such an actor', async () => {
    const result = await service.graphql(IMPORT, {
      input: ['.,', "'’", '   '].map((name) => ({ address: austin(`1 ${street()}`), owners: [{ type: 'entity', name, persons: [] }] })),
    });
    expect(result.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(result.body.errors[0].extensions.details.map((d: { path: string }) => d.path)).toEqual([
      'input.0.owners.0.name',
      'input.1.owners.0.name',
      'input.2.owners.0.name',
    ]);
  });

  it('accepts at most 1000 records per call', async () => {
    // Over HTTP 1001 records exceed the 64 KiB body limit first, so the service's own check is tested directly.
    const records = Array.from({ length: 1001 }, (_, i) => ({ address: austin(`${i + 1} Main St`), owners: [] }));
    await expect(importPropertyRecords(service.app.services.orm.em.fork(), records)).rejects.toMatchObject({
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });

  it('is for the platform only', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'] });
    const result = await service.graphql(IMPORT, { input: [] }, admin.key);
    expect(result.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });
});

describe('records provider', () => {
  const name = street();
  const address = austin(`123 ${name} Apt 4`, { state: 'tx' });
  beforeAll(async () => {
    await importRecords([
      {
        address,
        owners: [
          { type: 'person', firstName: 'John', lastName: "O'Brien" },
          { type: 'person', firstName: 'Mary', lastName: 'OBrien' },
          {
            type: 'entity',
            name: 'ACME HOLDINGS LLC',
            persons: [
              { firstName: 'Bob', lastName: 'Smith' },
              { firstName: 'Ann', lastName: 'Lee' },
            ],
          },
        ],
      },
      { address: austin(`125 ${name}`), owners: [] },
    ]);
  });

  it('treats an address without a property record as unresolvable', async () => {
    await expect(trace(austin(`1 ${street()}`))).rejects.toThrow(UnresolvableAddressError);
  });

  it('finds the property under equivalent spellings of its address', async () => {
    const spelled = austin(`123 ${name.toUpperCase().replace('STREET', 'ST')} #4`, { city: 'AUSTIN', zip: '78701-1234' });
    expect(names(await trace(spelled))).toEqual(["John O'Brien", 'Mary OBrien', 'Bob Smith', 'Ann Lee']);
  });

  it('returns every person owner and every person of every entity owner without an actor, in import order', async () => {
    expect(await trace(address)).toMatchObject({
      status: 'records_found',
      persons: [{ firstName: 'John' }, { firstName: 'Mary' }, { firstName: 'Bob' }, { firstName: 'Ann' }],
    });
  });

  it('matches person owners by the name parts the actor gives, ignoring case and punctuation', async () => {
    expect(names(await trace(address, { type: 'person', firstName: 'JOHN', lastName: 'obrien' }))).toEqual(["John O'Brien"]);
    expect(names(await trace(address, { type: 'person', lastName: "o'brien" }))).toEqual(["John O'Brien", 'Mary OBrien']);
    // Persons of an entity owner are reached through the entity, not by their own names.
    expect(await trace(address, { type: 'person', firstName: 'Bob', lastName: 'Smith' })).toEqual({
      status: 'no_records_found',
      persons: [],
    });
  });

  it('matches entity owners with suffix spellings folded, returning their persons', async () => {
    expect(names(await trace(address, { type: 'entity', name: 'Acme Holdings, L.L.C.' }))).toEqual(['Bob Smith', 'Ann Lee']);
  });

  it('answers no_records_found when no owner matches the actor, or the property has no owners', async () => {
    expect(await trace(address, { type: 'person', firstName: 'Zed' })).toEqual({ status: 'no_records_found', persons: [] });
    expect(await trace(address, { type: 'entity', name: 'Acme Holdings Inc' })).toEqual({ status: 'no_records_found', persons: [] });
    expect(await trace(austin(`125 ${name}`))).toEqual({ status: 'no_records_found', persons: [] });
  });
});

describe('import:records CLI (the deprecated alias of `admin records import`)', () => {
  // The CLI imports through the running service over HTTP, so it runs in embedded mode too.
  it('imports CSV and JSON Lines files, reporting rejected lines', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'property-records-'));
    try {
      const name = street();
      const csv = [
        'line1,line2,city,state,zip,owner_type,owner_name,first_name,last_name,middle_name,age,phones,emails',
        `5 ${name},Apt 2,Austin,tx,78701,person,,John,"O'Brien, ""Jr""",,40,"(512) 555-0100:mobile|512 555 0101",john@example.com|j@example.com`,
        `"5 ${name.toUpperCase().replace('STREET', 'ST')} #2",,AUSTIN,TX,78701-1234,entity,"Acme, L.L.C.",Bob,Smith,,,,`,
        `6 ${name},,Austin,ZZ,78701,person,,Bad,State,,,,`,
        `5 ${name},Apt 2,Austin,TX,78701,entity,ACME LLC,Ann,Lee,,,5125550102:residential,`,
      ].join('\r\n');
      const jsonl = [
        JSON.stringify({
          address: austin(`7 ${name}`),
          owners: [{ type: 'person', firstName: 'Zoe', phones: [{ number: '+1 (512) 555-0103', type: 'mobile' }] }],
        }),
        '',
        JSON.stringify({ address: austin(`8 ${name}`), owners: [{ type: 'entity' }] }),
      ].join('\n');
      writeFileSync(join(dir, 'records.csv'), csv);
      writeFileSync(join(dir, 'records.jsonl'), jsonl);
      const run = async (file: string) => {
        const { code, stdout, stderr } = await npmRun('import:records', [join(dir, file)], cliEnv(service));
        return { status: code, stdout, stderr };
      };

      const fromCsv = await run('records.csv');
      expect(fromCsv.stdout).toContain('Imported 1 records');
      expect(fromCsv.stderr).toContain('rejected line 4: address.state must be a two-letter USPS state code');
      expect(fromCsv.status).toBe(2);
      expect(await trace(austin(`5 ${name} Apt 2`))).toEqual({
        status: 'records_found',
        persons: [
          {
            firstName: 'John',
            lastName: 'O\'Brien, "Jr"',
            middleName: null,
            age: 40,
            phones: [
              { number: '5125550100', type: 'mobile' },
              { number: '5125550101', type: 'unknown' },
            ],
            emails: ['john@example.com', 'j@example.com'],
          },
          { firstName: 'Bob', lastName: 'Smith', middleName: null, age: null, phones: [], emails: [] },
          {
            firstName: 'Ann',
            lastName: 'Lee',
            middleName: null,
            age: null,
            phones: [{ number: '5125550102', type: 'residential' }],
            emails: [],
          },
        ],
      });

      const fromJsonl = await run('records.jsonl');
      expect(fromJsonl.stdout).toContain('Imported 1 records');
      expect(fromJsonl.stderr).toContain('rejected line 3: owners.0.name is required for an entity');
      expect(fromJsonl.status).toBe(2);
      expect(await trace(austin(`7 ${name}`))).toMatchObject({
        persons: [{ firstName: 'Zoe', phones: [{ number: '5125550103', type: 'mobile' }] }],
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
