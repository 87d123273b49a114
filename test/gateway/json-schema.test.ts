import { Ajv2020 } from 'ajv/dist/2020.js';
import { Kind, buildSchema, parse } from 'graphql';
import type { GraphQLArgument, GraphQLInputField, GraphQLInputObjectType, OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { fragmentsOf, JSON_SCHEMA_DIALECT, NUL_FREE_PATTERN, resultJsonSchema, variablesJsonSchema } from '../../src/schema/json-schema.js';
import type { JsonSchema } from '../../src/schema/json-schema.js';

const schema = buildSchema(/* GraphQL */ `
  scalar DateTime
  scalar JSON

  enum NotificationKind {
    LEAD_ASSIGNED
    TASK_DUE
    SYSTEM
  }

  "Filter for the notifications feed"
  input NotificationFilter {
    "Kinds to include"
    kinds: [NotificationKind!]
    since: DateTime
    search: String
    and: [NotificationFilter!]
    limitPerKind: Int = 5
  }
  input AddressInput {
    street: String!
    zip: String!
  }
  input SkipTraceInput {
    firstName: String!
    lastName: String
    address: AddressInput!
  }
  input LeadRef @oneOf {
    id: ID
    email: String
  }

  type Lead {
    id: ID!
    name: String
    phones: [String!]!
  }
  type Notification {
    id: ID!
    kind: NotificationKind!
    "Short headline"
    title: String!
    body: String
    createdAt: DateTime!
    meta: JSON
    lead: Lead
  }
  type NotificationConnection {
    items: [Notification!]!
    total: Int!
  }
  union SearchResult = Lead | Notification

  type Query {
    "Notifications feed, newest first"
    notifications(
      "Page size"
      limit: Int = 20
      offset: Int = 0
      filter: NotificationFilter
      kinds: [NotificationKind!]
    ): NotificationConnection!
    notification(id: ID!): Notification
    lead(ref: LeadRef!): Lead
    search(term: String!): [SearchResult!]!
  }
  type Mutation {
    markRead(ids: [ID!]!): Int!
    skipTrace("Person to trace" input: SkipTraceInput!): Lead
  }
`);

// Pothos puts `extensions` on args/input fields of the built schema; emulate that here.
function constrain(def: GraphQLArgument | GraphQLInputField | undefined, constraints: JsonSchema): void {
  if (!def) throw new Error('unknown arg/field');
  def.extensions = { ...def.extensions, constraints };
}
const query = schema.getQueryType()!.getFields();
const arg = (field: string, name: string, fields = query) => fields[field].args.find((a) => a.name === name);
constrain(arg('notifications', 'limit'), { minimum: 1, maximum: 50 });
constrain(arg('notifications', 'offset'), { minimum: 0, maximum: 10_000 });
constrain(arg('notifications', 'kinds'), { maxItems: 3 });
constrain(arg('markRead', 'ids', schema.getMutationType()!.getFields()), { minItems: 1, maxItems: 500, items: { maxLength: 64 } });
const inputField = (type: string, field: string) => (schema.getType(type) as GraphQLInputObjectType).getFields()[field];
constrain(inputField('NotificationFilter', 'search'), { maxLength: 200 });
constrain(inputField('AddressInput', 'zip'), { pattern: '^[0-9]{5}$' });

function op(source: string): OperationDefinitionNode {
  const def = parse(source).definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION);
  return def as OperationDefinitionNode;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
const validator = (s: JsonSchema) => {
  const validate = ajv.compile(s);
  return (value: unknown) => validate(value);
};

const FEED = op(`
  query Feed($limit: Int, $offset: Int! = 10, $filter: NotificationFilter, $kinds: [NotificationKind!]) {
    notifications(limit: $limit, offset: $offset, filter: $filter, kinds: $kinds) { total }
  }
`);

describe('variablesJsonSchema', () => {
  it('derives required/optional/default, nullability, enums, lists and constraints', () => {
    const s = variablesJsonSchema(schema, FEED);
    expect(s.type).toBe('object');
    expect(s.additionalProperties).toBe(false);
    expect(s.required).toBeUndefined(); // $offset is non-null but has a default
    const p = s.properties as Record<string, JsonSchema>;
    expect(p.limit).toEqual({
      type: ['integer', 'null'],
      minimum: 1,
      maximum: 50,
      description: 'Page size',
      default: 20,
    });
    expect(p.offset).toEqual({ type: 'integer', minimum: 0, maximum: 10_000, default: 10 });
    expect(p.kinds).toEqual({
      type: ['array', 'null'],
      maxItems: 3,
      items: { type: 'string', enum: ['LEAD_ASSIGNED', 'TASK_DUE', 'SYSTEM'] },
    });
    expect(p.filter).toEqual({ anyOf: [{ $ref: '#/$defs/NotificationFilter' }, { type: 'null' }] });
  });

  it('puts reachable input objects in $defs, including recursive ones', () => {
    const s = variablesJsonSchema(schema, FEED);
    const defs = s.$defs as Record<string, JsonSchema>;
    expect(Object.keys(defs)).toEqual(['NotificationFilter']);
    expect(defs.NotificationFilter).toEqual({
      type: 'object',
      additionalProperties: false,
      description: 'Filter for the notifications feed',
      properties: {
        kinds: {
          type: ['array', 'null'],
          description: 'Kinds to include',
          items: { type: 'string', enum: ['LEAD_ASSIGNED', 'TASK_DUE', 'SYSTEM'] },
        },
        since: { type: ['string', 'null'], format: 'date-time' },
        search: { type: ['string', 'null'], pattern: NUL_FREE_PATTERN, maxLength: 200 },
        and: { type: ['array', 'null'], items: { $ref: '#/$defs/NotificationFilter' } },
        limitPerKind: { type: ['integer', 'null'], minimum: -2147483648, maximum: 2147483647, default: 5 },
      },
    });
  });

  it('validates payloads with Ajv', () => {
    const ok = validator(variablesJsonSchema(schema, FEED));
    expect(ok({})).toBe(true);
    expect(ok({ limit: null, filter: null })).toBe(true);
    expect(ok({ limit: 50, offset: 0, kinds: ['SYSTEM'], filter: { kinds: ['TASK_DUE'], and: [{ search: 'x' }] } })).toBe(true);
    expect(ok({ unknown: 1 })).toBe(false);
    expect(ok({ limit: 0 })).toBe(false);
    expect(ok({ limit: 51 })).toBe(false);
    expect(ok({ limit: 'ten' })).toBe(false);
    expect(ok({ limit: 1.5 })).toBe(false);
    expect(ok({ offset: null })).toBe(false);
    expect(ok({ kinds: ['NOPE'] })).toBe(false);
    expect(ok({ kinds: ['SYSTEM', 'SYSTEM', 'SYSTEM', 'SYSTEM'] })).toBe(false);
    expect(ok({ filter: { bogus: true } })).toBe(false);
    expect(ok({ filter: { and: [{ search: 'x'.repeat(201) }] } })).toBe(false);
  });

  it('requires non-null variables without default', () => {
    const s = variablesJsonSchema(schema, op(`query ($id: ID!) { notification(id: $id) { id } }`));
    expect(s).toEqual({
      $schema: JSON_SCHEMA_DIALECT,
      type: 'object',
      additionalProperties: false,
      properties: { id: { type: 'string', pattern: NUL_FREE_PATTERN } },
      required: ['id'],
    });
    const ok = validator(s);
    expect(ok({ id: 'n1' })).toBe(true);
    expect(ok({})).toBe(false);
    expect(ok({ id: 1 })).toBe(false);
  });

  it('applies list constraints to the array and `items` to its elements', () => {
    const s = variablesJsonSchema(schema, op(`mutation ($ids: [ID!]!) { markRead(ids: $ids) }`));
    expect((s.properties as Record<string, JsonSchema>).ids).toEqual({
      type: 'array',
      minItems: 1,
      maxItems: 500,
      items: { type: 'string', pattern: NUL_FREE_PATTERN, maxLength: 64 },
    });
    const ok = validator(s);
    expect(ok({ ids: ['a', 'b'] })).toBe(true);
    expect(ok({ ids: [] })).toBe(false);
    expect(ok({ ids: Array.from({ length: 501 }, (_, i) => `n${i}`) })).toBe(false);
    expect(ok({ ids: ['x'.repeat(65)] })).toBe(false);
    expect(ok({ ids: null })).toBe(false);
  });

  it('merges constraints of an input field the variable is passed to directly', () => {
    const s = variablesJsonSchema(schema, op(`query ($q: String) { notifications(filter: { search: $q }) { total } }`));
    expect((s.properties as Record<string, JsonSchema>).q).toEqual({ type: ['string', 'null'], pattern: NUL_FREE_PATTERN, maxLength: 200 });
    expect(validator(s)({ q: 'x'.repeat(201) })).toBe(false);
  });

  it('combines several usages of one variable to the tightest bounds', () => {
    const s = variablesJsonSchema(schema, op(`query ($n: Int!) { notifications(limit: $n, offset: $n) { total } }`));
    expect((s.properties as Record<string, JsonSchema>).n).toMatchObject({ type: 'integer', minimum: 1, maximum: 50 });
  });

  it('puts annotations of a non-null input object next to an allOf-wrapped $ref, and handles @oneOf', () => {
    const s = variablesJsonSchema(
      schema,
      op(`mutation ($input: SkipTraceInput!, $ref: LeadRef!) {
      skipTrace(input: $input) { id } lead(ref: $ref) { id } }`),
    );
    expect((s.properties as Record<string, JsonSchema>).input).toEqual({
      allOf: [{ $ref: '#/$defs/SkipTraceInput' }],
      description: 'Person to trace',
    });
    expect((s.properties as Record<string, JsonSchema>).ref).toEqual({ $ref: '#/$defs/LeadRef' });
    const defs = s.$defs as Record<string, JsonSchema>;
    expect(defs.SkipTraceInput.required).toEqual(['firstName', 'address']);
    expect(Object.keys(defs)).toEqual(['SkipTraceInput', 'AddressInput', 'LeadRef']);
    const ok = validator(s);
    const input = { firstName: 'Ann', address: { street: 'Main 1', zip: '12345' } };
    expect(ok({ input, ref: { id: 'l1' } })).toBe(true);
    expect(ok({ input: { ...input, address: { street: 'Main 1', zip: 'abc' } }, ref: { id: 'l1' } })).toBe(false);
    expect(ok({ input, ref: {} })).toBe(false);
    expect(ok({ input, ref: { id: 'l1', email: 'a@b.c' } })).toBe(false);
    expect(ok({ input, ref: { id: null } })).toBe(false);
  });

  it('follows fragment spreads when given fragments, and throws clearly otherwise', () => {
    const doc = parse(`query ($limit: Int) { ...Feed } fragment Feed on Query { notifications(limit: $limit) { total } }`);
    const operation = doc.definitions[0] as OperationDefinitionNode;
    expect(() => variablesJsonSchema(schema, operation)).toThrow(/Fragment "Feed" is not defined/);
    const s = variablesJsonSchema(schema, operation, { fragments: fragmentsOf(doc) });
    expect((s.properties as Record<string, JsonSchema>).limit).toMatchObject({ minimum: 1, maximum: 50 });
  });
});

describe('resultJsonSchema', () => {
  const FEED_RESULT = op(`
    query Feed($limit: Int) {
      feed: notifications(limit: $limit) {
        total
        items { id kind headline: title body createdAt meta lead { name phones } }
      }
    }
  `);
  const item = {
    type: 'object',
    additionalProperties: false,
    properties: {
      id: { type: 'string' },
      kind: { type: 'string', enum: ['LEAD_ASSIGNED', 'TASK_DUE', 'SYSTEM'] },
      headline: { type: 'string', description: 'Short headline' },
      body: { type: ['string', 'null'] },
      createdAt: { type: 'string', format: 'date-time' },
      meta: {},
      lead: {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: { name: { type: ['string', 'null'] }, phones: { type: 'array', items: { type: 'string' } } },
        required: ['name', 'phones'],
      },
    },
    required: ['id', 'kind', 'headline', 'body', 'createdAt', 'meta', 'lead'],
  };
  const connection = {
    type: 'object',
    additionalProperties: false,
    properties: {
      total: { type: 'integer', minimum: -2147483648, maximum: 2147483647 },
      items: { type: 'array', items: item },
    },
    required: ['total', 'items'],
    description: 'Notifications feed, newest first',
  };

  it('describes the data object with aliases, nested objects and lists', () => {
    expect(resultJsonSchema(schema, FEED_RESULT)).toEqual({
      $schema: JSON_SCHEMA_DIALECT,
      type: 'object',
      additionalProperties: false,
      properties: { feed: connection },
      required: ['feed'],
    });
  });

  it('returns the single root field value with rootField', () => {
    expect(resultJsonSchema(schema, FEED_RESULT, { rootField: true })).toEqual({ $schema: JSON_SCHEMA_DIALECT, ...connection });
    const two = op(`{ a: notification(id: "1") { id } b: notification(id: "2") { id } }`);
    expect(Object.keys(resultJsonSchema(schema, two, { rootField: true }).properties as object)).toEqual(['a', 'b']);
  });

  it('validates sample results with Ajv', () => {
    const ok = validator(resultJsonSchema(schema, FEED_RESULT, { rootField: true }));
    const good = {
      id: 'n1',
      kind: 'TASK_DUE',
      headline: 'Call back',
      body: null,
      createdAt: '2024-01-01T00:00:00Z',
      meta: { any: ['thing'] },
      lead: { name: null, phones: ['+1 555'] },
    };
    expect(ok({ total: 1, items: [good] })).toBe(true);
    expect(ok({ total: 1, items: [{ ...good, lead: null }] })).toBe(true);
    expect(ok({ total: 1, items: [{ ...good, kind: 'NOPE' }] })).toBe(false);
    expect(ok({ total: 1, items: [{ ...good, headline: null }] })).toBe(false);
    expect(ok({ total: 1, items: [{ ...good, extra: 1 }] })).toBe(false);
    expect(ok({ items: [] })).toBe(false);
  });

  it('handles unions via inline fragments, fragment spreads, __typename and @include', () => {
    const doc = parse(`
      query ($withName: Boolean!) {
        search(term: "x") { __typename ... on Lead { id name @include(if: $withName) } ...N }
      }
      fragment N on Notification { id title }
    `);
    const operation = doc.definitions[0] as OperationDefinitionNode;
    expect(() => resultJsonSchema(schema, operation)).toThrow(/Fragment "N" is not defined/);
    const s = resultJsonSchema(schema, operation, { rootField: true, fragments: fragmentsOf(doc) });
    const ok = validator(s);
    expect(
      ok([
        { __typename: 'Lead', id: 'l1', name: 'Ann' },
        { __typename: 'Lead', id: 'l2' },
      ]),
    ).toBe(true);
    expect(ok([{ __typename: 'Notification', id: 'n1', title: 'Hi' }])).toBe(true);
    expect(ok([{ __typename: 'Lead', id: 'l1', title: 'Hi' }])).toBe(false);
    expect(ok([{ __typename: 'Notification', id: 'n1' }])).toBe(false);
  });

  it('uses the mutation root type for mutations', () => {
    const s = resultJsonSchema(schema, op(`mutation { markRead(ids: ["a"]) }`));
    expect(s.required).toEqual(['markRead']);
    expect(validator(s)({ markRead: 3 })).toBe(true);
  });
});
