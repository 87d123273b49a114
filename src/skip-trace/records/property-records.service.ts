/**
 * Property records: the data behind the `records` skip-trace provider. Imported in batches
 * (GraphQL `importPropertyRecords`, the `import:records` CLI) and matched against a trace's
 * standardized address and normalized actor (contract section 4).
 */
import { randomUUID } from 'node:crypto';
import { badInput, type ErrorDetail } from '../../common/errors.js';
import type { Em } from '../../infra/database/orm.js';
import {
  addressKey,
  normalizeEntityName,
  normalizePersonNamePart,
  standardizeAddress,
  type AddressInput,
  type NormalizedActor,
  type StandardAddress,
} from '../address/index.js';
import { PHONE_TYPES, UnresolvableAddressError, type PhoneType, type SkipTraceProvider, type TracedPerson } from '../providers/provider.js';
import { ACTOR_TYPES, validateAddressInput, type ActorType } from '../skip-trace.types.js';

export const IMPORT_MAX = 1000;
export const OWNERS_MAX = 100;
export const PERSONS_MAX = 100;
export const CONTACTS_MAX = 50;
export const NAME_MAX_LENGTH = 200;
export const EMAIL_MAX_LENGTH = 320;
export const AGE_MAX = 150;

export interface PhoneInput {
  number: string;
  type?: PhoneType | null;
}

export interface PropertyPersonInput {
  firstName?: string | null;
  lastName?: string | null;
  middleName?: string | null;
  age?: number | null;
  phones?: readonly PhoneInput[] | null;
  emails?: readonly string[] | null;
}

/** A person owner carries the person fields itself; an entity owner has a `name` and `persons`. */
export interface PropertyOwnerInput extends PropertyPersonInput {
  type: ActorType;
  name?: string | null;
  persons?: readonly PropertyPersonInput[] | null;
}

export interface PropertyRecordInput {
  address: AddressInput;
  owners: readonly PropertyOwnerInput[];
}

/** A person as stored: names as given (trimmed), plus the folded keys the matcher compares. */
interface PersonRow extends TracedPerson {
  firstKey: string | null;
  lastKey: string | null;
}

interface OwnerRow {
  type: ActorType;
  name: string | null;
  nameKey: string | null;
  persons: PersonRow[];
}

interface RecordRow {
  addressKey: string;
  address: StandardAddress;
  owners: OwnerRow[];
}

// ---------------------------------------------------------------------------
// Validation: accepts `unknown` because JSON Lines and CSV records arrive untyped.

const PERSON_FIELDS = ['firstName', 'lastName', 'middleName', 'age', 'phones', 'emails'] as const;
const OWNER_FIELDS = ['type', 'name', 'persons', ...PERSON_FIELDS];
const EMAIL_SHAPE = /^[^\s@]+@[^\s@]+$/u;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const absent = (v: unknown) => v === undefined || v === null;

class Checker {
  readonly details: ErrorDetail[] = [];
  fail(path: string, message: string): undefined {
    this.details.push({ path, message });
    return undefined;
  }

  /** Trimmed text, or null when absent or blank. */
  text(v: unknown, path: string, max = NAME_MAX_LENGTH): string | null | undefined {
    if (absent(v)) return null;
    if (typeof v !== 'string') return this.fail(path, 'must be a string');
    if (v.includes('\u0000')) return this.fail(path, 'must not contain U+0000');
    const t = v.trim();
    if (t.length > max) return this.fail(path, `must be at most ${max} characters`);
    return t === '' ? null : t;
  }

  list(v: unknown, path: string, max: number): unknown[] {
    if (absent(v)) return [];
    if (!Array.isArray(v)) return this.fail(path, 'must be a list') ?? [];
    if (v.length > max) return this.fail(path, `must hold at most ${max} items`) ?? [];
    return v;
  }

  /** Reports fields no input type declares, so a misspelt CSV/JSON field is not dropped silently. */
  known(o: Obj, fields: readonly string[], path: string): void {
    for (const key of Object.keys(o)) if (!fields.includes(key)) this.fail(`${path}.${key}`, 'is not a known field');
  }
}

/**
 * Digits only, with the US country code dropped from 11-digit numbers. 7..15 digits: shorter is
 * not dialable, longer exceeds E.164.
 */
export function normalizePhoneNumber(raw: string): string | null {
  let digits = raw.replace(/\D/gu, '');
  if (digits.length === 11 && digits.startsWith('1')) digits = digits.slice(1);
  return digits.length >= 7 && digits.length <= 15 ? digits : null;
}

function checkPhones(c: Checker, v: unknown, path: string): TracedPerson['phones'] {
  const phones: TracedPerson['phones'] = [];
  c.list(v, path, CONTACTS_MAX).forEach((item, i) => {
    const at = `${path}.${i}`;
    if (!isObj(item)) return c.fail(at, 'must be an object');
    c.known(item, ['number', 'type'], at);
    const raw = typeof item.number === 'number' ? String(item.number) : item.number;
    const number = typeof raw === 'string' ? normalizePhoneNumber(raw) : null;
    if (number === null) c.fail(`${at}.number`, 'must hold 7 to 15 digits');
    const type = absent(item.type) ? 'unknown' : String(item.type).trim().toLowerCase();
    if (!(PHONE_TYPES as readonly string[]).includes(type)) c.fail(`${at}.type`, `must be one of ${PHONE_TYPES.join(', ')}`);
    // The same number twice (often in two formats) is one phone; the first type given wins.
    else if (number !== null && !phones.some((p) => p.number === number)) phones.push({ number, type: type as PhoneType });
  });
  return phones;
}

function checkEmails(c: Checker, v: unknown, path: string): string[] {
  const emails: string[] = [];
  c.list(v, path, CONTACTS_MAX).forEach((item, i) => {
    const email = c.text(item, `${path}.${i}`, EMAIL_MAX_LENGTH);
    if (!email) return;
    if (!EMAIL_SHAPE.test(email)) return c.fail(`${path}.${i}`, 'must be an email address');
    if (!emails.some((e) => e.toLowerCase() === email.toLowerCase())) emails.push(email);
  });
  return emails;
}

function checkPerson(c: Checker, o: Obj, path: string): PersonRow {
  const firstName = c.text(o.firstName, `${path}.firstName`) ?? null;
  const lastName = c.text(o.lastName, `${path}.lastName`) ?? null;
  const middleName = c.text(o.middleName, `${path}.middleName`) ?? null;
  let age: number | null = null;
  if (!absent(o.age)) {
    if (typeof o.age === 'number' && Number.isInteger(o.age) && o.age >= 0 && o.age <= AGE_MAX) age = o.age;
    else c.fail(`${path}.age`, `must be an integer from 0 to ${AGE_MAX}`);
  }
  return {
    firstName,
    lastName,
    middleName,
    firstKey: firstName === null ? null : normalizePersonNamePart(firstName) || null,
    lastKey: lastName === null ? null : normalizePersonNamePart(lastName) || null,
    age,
    phones: checkPhones(c, o.phones, `${path}.phones`),
    emails: checkEmails(c, o.emails, `${path}.emails`),
  };
}

function checkOwner(c: Checker, v: unknown, path: string): OwnerRow | undefined {
  if (!isObj(v)) return c.fail(path, 'must be an object');
  c.known(v, OWNER_FIELDS, path);
  const type = typeof v.type === 'string' ? v.type.trim().toLowerCase() : '';
  if (type === 'person') {
    // As for a trace's actor: `name` and `persons` belong to entities only.
    if (!absent(v.name)) c.fail(`${path}.name`, 'is allowed only with type entity');
    if (!absent(v.persons)) c.fail(`${path}.persons`, 'is allowed only with type entity');
    return { type, name: null, nameKey: null, persons: [checkPerson(c, v, path)] };
  }
  if (type === 'entity') {
    for (const field of PERSON_FIELDS) if (!absent(v[field])) c.fail(`${path}.${field}`, 'is allowed only with type person (put people under persons)');
    const name = c.text(v.name, `${path}.name`);
    const nameKey = name ? normalizeEntityName(name) : '';
    if (name === null) c.fail(`${path}.name`, 'is required for an entity');
    else if (name !== undefined && nameKey === '') c.fail(`${path}.name`, 'must contain letters or digits');
    const persons = c.list(v.persons, `${path}.persons`, PERSONS_MAX).map((p, i): PersonRow | undefined => {
      if (!isObj(p)) return c.fail(`${path}.persons.${i}`, 'must be an object');
      c.known(p, PERSON_FIELDS, `${path}.persons.${i}`);
      return checkPerson(c, p, `${path}.persons.${i}`);
    });
    return { type, name: name ?? null, nameKey, persons: persons.filter((p) => p !== undefined) };
  }
  return c.fail(`${path}.type`, `must be one of ${ACTOR_TYPES.join(', ')}`);
}

function checkRecord(c: Checker, v: unknown, path: string): RecordRow | undefined {
  if (!isObj(v)) return c.fail(path, 'must be an object');
  c.known(v, ['address', 'owners'], path);
  const addressDetails = validateAddressInput(v.address, `${path}.address`);
  c.details.push(...addressDetails);
  if (absent(v.owners)) c.fail(`${path}.owners`, 'is required');
  const owners = c.list(v.owners, `${path}.owners`, OWNERS_MAX).map((o, i) => checkOwner(c, o, `${path}.owners.${i}`));
  if (addressDetails.length > 0) return undefined;
  const address = standardizeAddress(v.address as AddressInput);
  return { addressKey: addressKey(address), address, owners: owners.filter((o) => o !== undefined) };
}

/** Problems with one record, paths relative to it (`owners.0.name`); empty when it can be imported. */
export function checkPropertyRecord(record: unknown): ErrorDetail[] {
  const c = new Checker();
  checkRecord(c, record, 'record');
  return c.details.map((d) => ({ ...d, path: d.path.replace(/^record\.?/u, '') }));
}

// ---------------------------------------------------------------------------
// Import

/**
 * Upserts each record's property by its address key and replaces its owners, all in one
 * transaction with one statement per table. Within one call a later record for an address
 * replaces an earlier one, as a later call would. Rejects the whole call if any record is invalid.
 */
export async function importPropertyRecords(em: Em, records: readonly PropertyRecordInput[]): Promise<{ imported: number }> {
  if (records.length > IMPORT_MAX) throw badInput(`input may hold at most ${IMPORT_MAX} records.`, [{ path: 'input', message: `must hold at most ${IMPORT_MAX} items` }]);
  const c = new Checker();
  const rows = records.map((r: unknown, i) => checkRecord(c, r, `input.${i}`));
  if (c.details.length > 0) throw badInput('Some property records are invalid.', c.details);
  const byKey = new Map<string, RecordRow>();
  for (const row of rows) if (row) byKey.set(row.addressKey, row);
  if (byKey.size === 0) return { imported: 0 };

  const properties = [...byKey.values()].map((r) => ({
    id: randomUUID(),
    address_key: r.addressKey,
    line1: r.address.line1,
    city: r.address.city,
    state: r.address.state,
    zip5: r.address.zip5,
  }));

  await em.transactional(async (tx) => {
    // Rows are locked in address-key order, so two overlapping imports cannot deadlock.
    const saved = await tx.execute<{ id: string; address_key: string }[]>(
      `insert into properties (id, address_key, line1, city, state, zip5)
       select id, address_key, line1, city, state, zip5
       from jsonb_to_recordset(?::jsonb) as r(id uuid, address_key text, line1 text, city text, state text, zip5 text)
       order by address_key
       on conflict (address_key) do update
         set line1 = excluded.line1, city = excluded.city, state = excluded.state, zip5 = excluded.zip5, updated_at = now()
       returning id, address_key`,
      [JSON.stringify(properties)],
    );
    const propertyIds = saved.map((p) => p.id);
    await tx.execute(`delete from property_owners where property_id in (select jsonb_array_elements_text(?::jsonb)::uuid)`, [JSON.stringify(propertyIds)]);

    const owners: Obj[] = [];
    const persons: Obj[] = [];
    for (const { id: propertyId, address_key } of saved) {
      byKey.get(address_key)!.owners.forEach((owner, position) => {
        const ownerId = randomUUID();
        owners.push({ id: ownerId, property_id: propertyId, position, type: owner.type, name: owner.name, name_key: owner.nameKey });
        owner.persons.forEach((p, i) =>
          persons.push({
            id: randomUUID(), owner_id: ownerId, position: i,
            first_name: p.firstName, last_name: p.lastName, middle_name: p.middleName,
            first_key: p.firstKey, last_key: p.lastKey, age: p.age, phones: p.phones, emails: p.emails,
          }),
        );
      });
    }
    if (owners.length > 0) {
      await tx.execute(
        `insert into property_owners (id, property_id, position, type, name, name_key)
         select * from jsonb_to_recordset(?::jsonb) as r(id uuid, property_id uuid, position int, type text, name text, name_key text)`,
        [JSON.stringify(owners)],
      );
    }
    if (persons.length > 0) {
      await tx.execute(
        `insert into property_persons (id, owner_id, position, first_name, last_name, middle_name, first_key, last_key, age, phones, emails)
         select * from jsonb_to_recordset(?::jsonb) as r(id uuid, owner_id uuid, position int, first_name text, last_name text,
           middle_name text, first_key text, last_key text, age int, phones jsonb, emails jsonb)`,
        [JSON.stringify(persons)],
      );
    }
  });
  return { imported: records.length };
}

// ---------------------------------------------------------------------------
// Provider

interface MatchRow {
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

/** Whether an owner's person is one the actor names (contract section 4). */
function matches(row: MatchRow, actor: NormalizedActor | null): boolean {
  if (actor === null) return true;
  if (actor.type === 'entity') return row.owner_type === 'entity' && row.name_key === actor.name;
  // Only the name parts the actor gives are compared: `{lastName: "Smith"}` matches any Smith.
  return (
    row.owner_type === 'person' &&
    (actor.firstName === null || row.first_key === actor.firstName) &&
    (actor.lastName === null || row.last_key === actor.lastName)
  );
}

/** jsonb arrives parsed from node-postgres, but a driver may hand back the text. */
const jsonArray = <T>(v: unknown): T[] => (typeof v === 'string' ? (JSON.parse(v) as T[]) : Array.isArray(v) ? (v as T[]) : []);

export function createRecordsProvider(): SkipTraceProvider {
  return {
    name: 'records',
    async trace({ address, actor }, em) {
      // The property row comes back even without owners, which tells "unknown address" apart.
      const rows = await em.execute<MatchRow[]>(
        `select o.type as owner_type, o.name_key, p.id as person_id, p.first_name, p.last_name, p.middle_name,
           p.first_key, p.last_key, p.age, p.phones, p.emails
         from properties pr
         left join property_owners o on o.property_id = pr.id
         left join property_persons p on p.owner_id = o.id
         where pr.address_key = ?
         order by o.position, p.position`,
        [addressKey(address)],
      );
      if (rows.length === 0) throw new UnresolvableAddressError();
      const persons: TracedPerson[] = rows
        .filter((row) => row.person_id !== null && matches(row, actor))
        .map((row) => ({
          firstName: row.first_name,
          lastName: row.last_name,
          middleName: row.middle_name,
          age: row.age,
          phones: jsonArray<TracedPerson['phones'][number]>(row.phones),
          emails: jsonArray<string>(row.emails),
        }));
      return { status: persons.length > 0 ? 'records_found' : 'no_records_found', persons };
    },
  };
}
