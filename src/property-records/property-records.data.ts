/**
 * Raw SQL: set-based batch writes and a hot lookup. The migration's re-keying keeps its own SQL
 * (property-rekey.ts), since it must work on the tables as they were at that migration.
 */
import { randomUUID } from 'node:crypto';
import type { Em } from '../infra/database/orm.js';
import { inUnitOfWork, sql, type Db } from '../infra/database/sql.js';
import type { StandardAddress } from '../address/index.js';
import type { ActorType } from '../skip-trace/input-rules.js';
import type { TracedPerson } from '../skip-trace/providers/provider.js';

/** Names as given, plus the folded keys the matcher compares. */
export interface PersonRow extends TracedPerson {
  firstKey: string | null;
  lastKey: string | null;
}

export interface OwnerRow {
  type: ActorType;
  name: string | null;
  nameKey: string | null;
  persons: PersonRow[];
}

export interface PropertyRecordRow {
  addressKey: string;
  address: StandardAddress;
  owners: OwnerRow[];
}

/** One statement per table, in one transaction. A later row for an address replaces an earlier one. */
export async function replacePropertyRecords(em: Em, records: readonly PropertyRecordRow[]): Promise<void> {
  const byKey = new Map<string, PropertyRecordRow>();
  for (const record of records) byKey.set(record.addressKey, record);
  if (byKey.size === 0) return;
  await em.transactional(async (tx) => {
    const saved = await upsertProperties(tx, [...byKey.values()]);
    await inUnitOfWork(
      tx,
      sql`delete from property_owners where property_id in (select jsonb_array_elements_text(${JSON.stringify(saved.map((p) => p.id))}::jsonb)::uuid)`,
    );
    const { owners, persons } = ownerRows(saved.map(({ id, address_key }) => ({ propertyId: id, record: byKey.get(address_key)! })));
    if (owners.length > 0) {
      await inUnitOfWork(
        tx,
        sql`insert into property_owners (id, property_id, position, type, name, name_key)
         select * from jsonb_to_recordset(${JSON.stringify(owners)}::jsonb) as r(id uuid, property_id uuid, position int, type text, name text, name_key text)`,
      );
    }
    if (persons.length > 0) {
      await inUnitOfWork(
        tx,
        sql`insert into property_persons (id, owner_id, position, first_name, last_name, middle_name, first_key, last_key, age, phones, emails)
         select * from jsonb_to_recordset(${JSON.stringify(persons)}::jsonb) as r(id uuid, owner_id uuid, position int, first_name text, last_name text,
           middle_name text, first_key text, last_key text, age int, phones jsonb, emails jsonb)`,
      );
    }
  });
}

function upsertProperties(tx: Em, records: PropertyRecordRow[]): Promise<{ id: string; address_key: string }[]> {
  const properties = records.map((r) => ({
    id: randomUUID(),
    address_key: r.addressKey,
    line1: r.address.line1,
    city: r.address.city,
    state: r.address.state,
    zip5: r.address.zip5,
  }));
  // Rows are locked in address-key order, so two overlapping imports cannot deadlock.
  return inUnitOfWork(
    tx,
    sql`insert into properties (id, address_key, line1, city, state, zip5)
       select id, address_key, line1, city, state, zip5
       from jsonb_to_recordset(${JSON.stringify(properties)}::jsonb) as r(id uuid, address_key text, line1 text, city text, state text, zip5 text)
       order by address_key
       on conflict (address_key) do update
         set line1 = excluded.line1, city = excluded.city, state = excluded.state, zip5 = excluded.zip5, updated_at = now()
       returning id, address_key`,
  );
}

function ownerRows(saved: { propertyId: string; record: PropertyRecordRow }[]) {
  const owners: Record<string, unknown>[] = [];
  const persons: Record<string, unknown>[] = [];
  for (const { propertyId, record } of saved) {
    record.owners.forEach((owner, position) => {
      const ownerId = randomUUID();
      owners.push({ id: ownerId, property_id: propertyId, position, type: owner.type, name: owner.name, name_key: owner.nameKey });
      owner.persons.forEach((p, i) =>
        persons.push({
          id: randomUUID(),
          owner_id: ownerId,
          position: i,
          first_name: p.firstName,
          last_name: p.lastName,
          middle_name: p.middleName,
          first_key: p.firstKey,
          last_key: p.lastKey,
          age: p.age,
          phones: p.phones,
          emails: p.emails,
        }),
      );
    });
  }
  return { owners, persons };
}

export interface StoredOwnerPerson {
  ownerType: ActorType;
  nameKey: string | null;
  person: PersonRow;
}

interface OwnerPersonRow {
  owner_type: ActorType | null;
  name_key: string | null;
  person_id: string | null;
  first_name: string | null;
  last_name: string | null;
  middle_name: string | null;
  first_key: string | null;
  last_key: string | null;
  age: number | null;
  phones: unknown;
  emails: unknown;
}

/** jsonb arrives parsed from node-postgres, but a driver may hand back the text. */
const jsonArray = <T>(v: unknown): T[] => (typeof v === 'string' ? (JSON.parse(v) as T[]) : Array.isArray(v) ? (v as T[]) : []);

/** Null when no property has the key; a property without owners answers `[]`. */
export async function findPropertyPersons(db: Db, addressKey: string): Promise<StoredOwnerPerson[] | null> {
  const rows = await db.rows<OwnerPersonRow>(
    sql`select o.type as owner_type, o.name_key, p.id as person_id, p.first_name, p.last_name, p.middle_name,
       p.first_key, p.last_key, p.age, p.phones, p.emails
     from properties pr
     left join property_owners o on o.property_id = pr.id
     left join property_persons p on p.owner_id = o.id
     where pr.address_key = ${addressKey}
     order by o.position, p.position`,
  );
  if (rows.length === 0) return null;
  return rows.flatMap((row) =>
    row.person_id === null || row.owner_type === null
      ? []
      : [
          {
            ownerType: row.owner_type,
            nameKey: row.name_key,
            person: {
              firstName: row.first_name,
              lastName: row.last_name,
              middleName: row.middle_name,
              firstKey: row.first_key,
              lastKey: row.last_key,
              age: row.age,
              phones: jsonArray<TracedPerson['phones'][number]>(row.phones),
              emails: jsonArray<string>(row.emails),
            },
          },
        ],
  );
}
