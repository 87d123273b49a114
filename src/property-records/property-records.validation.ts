/** Takes `unknown`: JSON Lines and CSV records arrive untyped. Addresses and names follow the trace's rules (input-rules.ts). */
import { atMostItems, mustBeOfType, mustBeOneOf, REQUIRED, UNKNOWN_FIELD } from '../common/detail-messages.js';
import type { ErrorDetail } from '../common/errors.js';
import { addressKey, normalizePersonNamePart, standardizeAddress, normalizeEntityName, type AddressInput } from '../address/index.js';
import {
  ACTOR_TYPES,
  checkAddress,
  checkOptionalText,
  isEntityName,
  RULE_MESSAGES,
  TEXT_MAX_LENGTH,
  type ActorType,
} from '../skip-trace/input-rules.js';
import { PHONE_TYPES, type PhoneType, type TracedPerson } from '../skip-trace/providers/provider.js';
import type { PersonRow, PropertyRecordRow, OwnerRow } from './property-records.data.js';

export const IMPORT_MAX = 1000;
export const OWNERS_MAX = 100;
export const PERSONS_MAX = 100;
export const CONTACTS_MAX = 50;
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

  /** Null when absent or blank, undefined when refused. */
  text(v: unknown, path: string, max = TEXT_MAX_LENGTH): string | null | undefined {
    return checkOptionalText(this.details, v, path, { max, of: 'trimmed' });
  }

  list(v: unknown, path: string, max: number): unknown[] {
    if (absent(v)) return [];
    if (!Array.isArray(v)) return this.fail(path, mustBeOfType(['array'])) ?? [];
    if (v.length > max) return this.fail(path, atMostItems(max)) ?? [];
    return v;
  }

  /** So a misspelt CSV/JSON field is not dropped silently. */
  known(o: Obj, fields: readonly string[], path: string): void {
    for (const key of Object.keys(o)) if (!fields.includes(key)) this.fail(`${path}.${key}`, UNKNOWN_FIELD);
  }
}

/** 7 to 15 digits: shorter is not dialable, longer exceeds E.164. */
export function normalizePhoneNumber(raw: string): string | null {
  let digits = raw.replace(/\D/gu, '');
  if (digits.length === 11 && digits.startsWith('1')) digits = digits.slice(1);
  return digits.length >= 7 && digits.length <= 15 ? digits : null;
}

function checkPhones(c: Checker, v: unknown, path: string): TracedPerson['phones'] {
  const phones: TracedPerson['phones'] = [];
  c.list(v, path, CONTACTS_MAX).forEach((item, i) => {
    const at = `${path}.${i}`;
    if (!isObj(item)) return c.fail(at, mustBeOfType(['object']));
    c.known(item, ['number', 'type'], at);
    const raw = typeof item.number === 'number' ? String(item.number) : item.number;
    const number = typeof raw === 'string' ? normalizePhoneNumber(raw) : null;
    if (number === null) c.fail(`${at}.number`, 'must hold 7 to 15 digits');
    const type = absent(item.type) ? 'unknown' : String(item.type).trim().toLowerCase();
    if (!(PHONE_TYPES as readonly string[]).includes(type)) c.fail(`${at}.type`, mustBeOneOf(PHONE_TYPES));
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
  if (!isObj(v)) return c.fail(path, mustBeOfType(['object']));
  c.known(v, OWNER_FIELDS, path);
  const type = typeof v.type === 'string' ? v.type.trim().toLowerCase() : '';
  if (type === 'person') {
    // As for a trace's actor: `name` and `persons` belong to entities only.
    if (!absent(v.name)) c.fail(`${path}.name`, RULE_MESSAGES.onlyWithType('entity'));
    if (!absent(v.persons)) c.fail(`${path}.persons`, RULE_MESSAGES.onlyWithType('entity'));
    return { type, name: null, nameKey: null, persons: [checkPerson(c, v, path)] };
  }
  if (type === 'entity') {
    // An entity's people are listed under `persons`.
    for (const field of PERSON_FIELDS) if (!absent(v[field])) c.fail(`${path}.${field}`, RULE_MESSAGES.onlyWithType('person'));
    const name = c.text(v.name, `${path}.name`);
    if (name !== undefined && !isEntityName(name)) c.fail(`${path}.name`, RULE_MESSAGES.entityName);
    const persons = c.list(v.persons, `${path}.persons`, PERSONS_MAX).map((p, i): PersonRow | undefined => {
      if (!isObj(p)) return c.fail(`${path}.persons.${i}`, mustBeOfType(['object']));
      c.known(p, PERSON_FIELDS, `${path}.persons.${i}`);
      return checkPerson(c, p, `${path}.persons.${i}`);
    });
    return { type, name: name ?? null, nameKey: name ? normalizeEntityName(name) : '', persons: persons.filter((p) => p !== undefined) };
  }
  return c.fail(`${path}.type`, mustBeOneOf(ACTOR_TYPES));
}

function checkRecord(c: Checker, v: unknown, path: string): PropertyRecordRow | undefined {
  if (!isObj(v)) return c.fail(path, mustBeOfType(['object']));
  c.known(v, ['address', 'owners'], path);
  const addressDetails = checkAddress(v.address, `${path}.address`);
  c.details.push(...addressDetails);
  if (absent(v.owners)) c.fail(`${path}.owners`, REQUIRED);
  const owners = c.list(v.owners, `${path}.owners`, OWNERS_MAX).map((o, i) => checkOwner(c, o, `${path}.owners.${i}`));
  if (addressDetails.length > 0) return undefined;
  const address = standardizeAddress(v.address as AddressInput);
  return { addressKey: addressKey(address), address, owners: owners.filter((o) => o !== undefined) };
}

/** Paths relative to the record (`owners.0.name`). */
export function checkPropertyRecord(record: unknown): ErrorDetail[] {
  const c = new Checker();
  checkRecord(c, record, 'record');
  return c.details.map((d) => ({ ...d, path: d.path.replace(/^record\.?/u, '') }));
}

/** Paths `input.3.owners.0.name`. */
export function checkPropertyRecords(records: readonly unknown[]): { rows: PropertyRecordRow[]; details: ErrorDetail[] } {
  const c = new Checker();
  const rows = records.map((r, i) => checkRecord(c, r, `input.${i}`));
  return { rows: rows.filter((r) => r !== undefined), details: c.details };
}
