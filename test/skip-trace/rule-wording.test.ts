/**
 * One wording per rule: an address or actor that breaks a rule gets the same `details[].message`
 * whichever way it came in: `POST /api/v1/skiptrace` (Ajv on the derived JSON Schema), the
 * `skipTrace` mutation on `/graphql` (the resolver), and the property-record import (its
 * validation, the admin CLI's `records import`, and the `importPropertyRecords` mutation's). And the
 * rules' own messages stay out of the published JSON Schemas.
 */
import { randomUUID } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse, type OperationDefinitionNode } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNKNOWN_FIELD } from '../../src/common/detail-messages.js';
import { NUL_DETAIL } from '../../src/common/nul.js';
import { schema } from '../../src/app/schema.js';
import { NUL_FREE_PATTERN, variablesJsonSchema } from '../../src/schema/json-schema.js';
import { RULE_MESSAGES } from '../../src/skip-trace/input-rules.js';
import { checkPropertyRecord } from '../../src/property-records/property-records.validation.js';
import { startService, type TestService } from '../support/harness.js';

let service: TestService;
let key: string;

beforeAll(async () => {
  service = await startService();
  const org = await service.graphql(`mutation($name: String!) { createOrganization(name: $name) { id } }`, {
    name: `Wording ${randomUUID()}`,
  });
  const organizationId = org.body.data.createOrganization.id;
  const issued = await service.graphql(`mutation($org: ID!) { generateSkipTraceKey(organizationId: $org) { secret } }`, {
    org: organizationId,
  });
  key = issued.body.data.generateSkipTraceKey.secret;
});
afterAll(() => service?.close());

type Detail = { path: string; message: string };
const ADDRESS = { line1: '123 Main St', city: 'Austin', state: 'TX', zip: '78701' };
const SKIP_TRACE = `mutation($input: SkipTraceInput!) { skipTrace(input: $input) { id } }`;
const IMPORT = `mutation($input: [PropertyRecordInput!]!) { importPropertyRecords(input: $input) { imported } }`;

/** The message of `path` among `details`, failing when there is not exactly one. */
function messageAt(details: Detail[] | undefined, path: string): string {
  const matching = (details ?? []).filter((d) => d.path === path);
  expect({ path, details: matching }).toEqual({ path, details: [{ path, message: expect.any(String) }] });
  return matching[0].message;
}

async function viaRest(body: Record<string, unknown>, path: string): Promise<string> {
  const result = await service.request('/api/v1/skiptrace', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  expect(result.status).toBe(422);
  return messageAt(result.body.error.details, path);
}

async function viaGraphql(input: Record<string, unknown>, path: string): Promise<string> {
  const result = await service.graphql(SKIP_TRACE, { input }, key);
  expect(result.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  return messageAt(result.body.errors[0].extensions.details, path);
}

/** The import's validation (what the CLI prints), and the `importPropertyRecords` mutation's details. */
async function viaImport(record: Record<string, unknown>, path: string): Promise<string> {
  const checked = messageAt(checkPropertyRecord(record), path);
  const imported = await service.graphql(IMPORT, { input: [record] });
  expect(imported.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  expect(messageAt(imported.body.errors[0].extensions.details, `input.0.${path}`)).toBe(checked);
  return checked;
}

/** The same broken address on every route: one message, the rule's. */
async function addressMessages(address: Record<string, unknown>, field: string): Promise<string[]> {
  return [
    await viaRest({ address }, `address.${field}`),
    await viaGraphql({ address }, `address.${field}`),
    await viaImport({ address, owners: [] }, `address.${field}`),
  ];
}

describe('one wording per address rule, on every route', () => {
  it('words an invalid ZIP alike, naming its forms (not a raw pattern)', async () => {
    for (const zip of ['nope', '7870', '78701-12']) {
      expect({ zip, messages: await addressMessages({ ...ADDRESS, zip }, 'zip') }).toEqual({
        zip,
        messages: Array(3).fill(RULE_MESSAGES.zip),
      });
    }
    expect(RULE_MESSAGES.zip).toContain('12345-6789');
    expect(RULE_MESSAGES.zip).not.toContain('\\d');
  });

  it('words a state that is not a USPS code alike, whether its length (JSON Schema) or its letters (resolver) give it away', async () => {
    for (const state of ['XX', 'Texas', 'T', '']) {
      expect({ state, messages: await addressMessages({ ...ADDRESS, state }, 'state') }).toEqual({
        state,
        messages: Array(3).fill(RULE_MESSAGES.state),
      });
    }
    expect(RULE_MESSAGES.state).toMatch(/^must be a two-letter USPS state code/);
    for (const code of ['TX', 'DC', 'PR', 'AE']) expect(RULE_MESSAGES.state).toContain(code);
  });

  it('words an over-long address line alike', async () => {
    expect(await addressMessages({ ...ADDRESS, line1: `1 ${'M'.repeat(199)}` }, 'line1')).toEqual(
      Array(3).fill('must be at most 200 characters'),
    );
    expect(await addressMessages({ ...ADDRESS, line2: 'U'.repeat(201) }, 'line2')).toEqual(Array(3).fill('must be at most 200 characters'));
  });

  it('words an empty and a blank line1 alike', async () => {
    for (const line1 of ['', '   ']) {
      expect({ line1, messages: await addressMessages({ ...ADDRESS, line1 }, 'line1') }).toEqual({
        line1,
        messages: Array(3).fill(RULE_MESSAGES.blank),
      });
    }
  });

  it('words an unknown address field alike on REST and in the import', async () => {
    expect(await viaRest({ address: { ...ADDRESS, county: 'Travis' } }, 'address.county')).toBe(UNKNOWN_FIELD);
    // GraphQL refuses undeclared fields itself, before any resolver: only the import's own check words them.
    expect(messageAt(checkPropertyRecord({ address: { ...ADDRESS, county: 'Travis' }, owners: [] }), 'address.county')).toBe(UNKNOWN_FIELD);
  });

  it('gives the import the one U+0000 wording', () => {
    expect(messageAt(checkPropertyRecord({ address: { ...ADDRESS, city: 'Aus\u0000tin' }, owners: [] }), 'address.city')).toBe(NUL_DETAIL);
  });
});

describe('one wording per actor rule, on every route', () => {
  it('words a field of the other actor type alike (an actor on REST and /graphql, an owner in the import)', async () => {
    const person = { type: 'person', firstName: 'Jane', name: 'Acme LLC' };
    const entity = { type: 'entity', name: 'Acme LLC', firstName: 'Jane' };
    expect([
      await viaRest({ address: ADDRESS, actor: person }, 'actor.name'),
      await viaGraphql({ address: ADDRESS, actor: person }, 'actor.name'),
      await viaImport({ address: ADDRESS, owners: [person] }, 'owners.0.name'),
    ]).toEqual(Array(3).fill('is allowed only with type entity'));
    expect([
      await viaRest({ address: ADDRESS, actor: entity }, 'actor.firstName'),
      await viaGraphql({ address: ADDRESS, actor: entity }, 'actor.firstName'),
      await viaImport({ address: ADDRESS, owners: [entity] }, 'owners.0.firstName'),
    ]).toEqual(Array(3).fill('is allowed only with type person'));
  });

  it('words an entity without a usable name alike', async () => {
    for (const name of [undefined, '.,']) {
      const entity = { type: 'entity', name };
      expect([
        await viaRest({ address: ADDRESS, actor: entity }, 'actor.name'),
        await viaGraphql({ address: ADDRESS, actor: entity }, 'actor.name'),
        await viaImport({ address: ADDRESS, owners: [entity] }, 'owners.0.name'),
      ]).toEqual(Array(3).fill(RULE_MESSAGES.entityName));
    }
  });

  it('words an over-long name alike', async () => {
    const actor = { type: 'person', lastName: 'X'.repeat(201) };
    expect([
      await viaRest({ address: ADDRESS, actor }, 'actor.lastName'),
      await viaGraphql({ address: ADDRESS, actor }, 'actor.lastName'),
      await viaImport({ address: ADDRESS, owners: [actor] }, 'owners.0.lastName'),
    ]).toEqual(Array(3).fill('must be at most 200 characters'));
  });

  it('words a field no actor has alike on REST and in the import; /graphql refuses it before the resolver, naming it', async () => {
    const actor = { type: 'person', firstName: 'Jane', nickname: 'JD' };
    expect(await viaRest({ address: ADDRESS, actor }, 'actor.nickname')).toBe(UNKNOWN_FIELD);
    expect(messageAt(checkPropertyRecord({ address: ADDRESS, owners: [actor] }), 'owners.0.nickname')).toBe(UNKNOWN_FIELD);
    const graphql = await service.graphql(SKIP_TRACE, { input: { address: ADDRESS, actor } }, key);
    expect(graphql.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(graphql.body.errors[0].message).toContain('nickname');
  });

  it('names the allowed values of an enum, alike on REST and in the import', async () => {
    const rest = await viaRest({ address: ADDRESS, actor: { type: 'robot' } }, 'actor.type');
    expect(rest).toBe('must be one of: entity, person');
    expect(messageAt(checkPropertyRecord({ address: ADDRESS, owners: [{ type: 'robot' }] }), 'owners.0.type')).toBe(rest);
    const phone = checkPropertyRecord({ address: ADDRESS, owners: [{ type: 'person', phones: [{ number: '5125550100', type: 'fax' }] }] });
    expect(messageAt(phone, 'owners.0.phones.0.type')).toBe('must be one of: mobile, residential, unknown');
  });
});

describe("the rules' own messages and the published schemas", () => {
  const operation = parse(SKIP_TRACE).definitions[0] as OperationDefinitionNode;
  const strictAjv = () => new Ajv2020({ formats: { 'date-time': true }, logger: false });

  it("emits errorMessage only for the server's own validator", () => {
    const published = variablesJsonSchema(schema, operation);
    expect(JSON.stringify(published)).not.toContain('errorMessage');
    expect(() => strictAjv().compile(published)).not.toThrow();

    const own = variablesJsonSchema(schema, operation, { errorMessages: true });
    const address = (own.$defs as Record<string, { properties: Record<string, Record<string, unknown>> }>).SkipTraceAddressInput;
    // The ZIP's own pattern sits beside the rule every string meets (no U+0000), each with its message.
    expect(address.properties.zip).toMatchObject({
      pattern: NUL_FREE_PATTERN,
      allOf: [{ pattern: expect.any(String), errorMessage: { pattern: RULE_MESSAGES.zip } }],
    });
    expect(address.properties.state).toMatchObject({ errorMessage: { minLength: RULE_MESSAGES.state, maxLength: RULE_MESSAGES.state } });
    // Standard JSON Schema it is not: a default (strict) Ajv refuses the keyword.
    expect(() => strictAjv().compile(own)).toThrow(/errorMessage/);
  });

  it('publishes standard JSON Schema on GET /api/v1/operations, which a default Ajv compiles', async () => {
    const result = await service.request('/api/v1/operations');
    expect(result.status).toBe(200);
    expect(result.text).not.toContain('errorMessage');
    for (const op of result.body.operations) expect(() => strictAjv().compile(op.variables), op.operationId).not.toThrow();
  });
});
