/**
 * GraphQL hardening over HTTP: depth, alias, cost and token limits, batching off, introspection
 * for authenticated callers only, masked unexpected errors, refusals in GraphQL's shape with a
 * contract code, and the documents this service must keep serving (the gateway's persisted
 * documents, the skip trace mutation, GraphiQL's introspection query).
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { GraphQLError, getIntrospectionQuery, locatedError } from 'graphql';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/common/errors.js';
import { MAX_ALIASES, MAX_COST, MAX_DEPTH, MAX_TOKENS } from '../../src/http/graphql/limits.js';
import { maskError } from '../../src/http/graphql/graphql-errors.js';
import { publish, startService, type HttpResult, type Provisioned, type TestService } from '../support/harness.js';
import { GRAPHQL_CODES } from '../support/contract.js';
import { uniqueStreet } from '../support/billing.js';

let service: TestService;
let user: Provisioned;
let skipTraceKey: string;
let street: string;

const manifest = JSON.parse(
  readFileSync(new URL('../../src/http/gateway/__generated__/persisted-documents.json', import.meta.url), 'utf8'),
) as Record<string, string>;

function post(body: unknown, bearer: string | null = user.key, headers: Record<string, string> = {}): Promise<HttpResult> {
  return service.request('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A refusal: one BAD_USER_INPUT error (unless `code` says otherwise), no data, no 5xx, no internals. */
function expectRefused(result: HttpResult, messagePattern: RegExp, code = 'BAD_USER_INPUT') {
  expect(result.status).toBeLessThan(500);
  expect(result.body?.data ?? null).toBeNull();
  const errors = result.body?.errors as Array<{ message: string; extensions?: Record<string, unknown> }>;
  expect(Array.isArray(errors) && errors.length > 0).toBe(true);
  expect(errors.map((e) => e.extensions?.code)).toContain(code);
  for (const error of errors) {
    expect(GRAPHQL_CODES).toContain(error.extensions?.code);
    expect(Object.keys(error.extensions ?? {}).filter((k) => ['originalError', 'stack', 'exception', 'http'].includes(k))).toEqual([]);
  }
  expect(errors.map((e) => e.message)).toEqual(expect.arrayContaining([expect.stringMatching(messagePattern)]));
  expect(result.text).not.toMatch(/Syntax Error: (Query|Aliases|Token)|at .*\.(js|ts):\d+|node_modules/);
}

const expectData = (result: HttpResult) => {
  expect(result.body?.errors).toBeUndefined();
  expect(result.status).toBe(200);
  return result.body.data;
};

/** `{ __type(name: "Query") { ofType { … { name } } } }` nested to exactly `depth` levels. */
const typeWalk = (depth: number) => `{ __type(name: "Query") { ${'ofType { '.repeat(depth - 2)}name${' }'.repeat(depth - 1)} }`;

beforeAll(async () => {
  service = await startService();
  user = await service.provision({ scopes: ['READ', 'WRITE'] });
  await publish(service, user.userId, [{ title: 'Hardening one' }, { title: 'Hardening two' }]);

  const org = await service.graphql(`mutation($name: String!) { createOrganization(name: $name) { id } }`, {
    name: `Hardening ${randomUUID()}`,
  });
  const organizationId = org.body.data.createOrganization.id;
  await service.graphql(`mutation($org: ID!) { addSkipTraceCredits(organizationId: $org, amount: 10, reference: "hardening") { id } }`, {
    org: organizationId,
  });
  skipTraceKey = (
    await service.graphql(`mutation($org: ID!) { generateSkipTraceKey(organizationId: $org) { secret } }`, { org: organizationId })
  ).body.data.generateSkipTraceKey.secret;
  street = uniqueStreet();
  const imported = await service.graphql(
    `mutation($input: [PropertyRecordInput!]!) { importPropertyRecords(input: $input) { imported } }`,
    {
      input: [
        {
          address: { line1: `12 ${street} Road`, city: 'Austin', state: 'TX', zip: '78701' },
          owners: [{ type: 'person', firstName: 'Ann', lastName: 'Lee', phones: [{ number: '5125550199', type: 'mobile' }] }],
        },
      ],
    },
  );
  expect(imported.body.data.importPropertyRecords.imported).toBe(1);
});
afterAll(() => service?.close());

describe('limits', () => {
  it(`refuses an operation deeper than ${MAX_DEPTH} levels, and accepts one at the limit`, async () => {
    expectData(await post({ query: typeWalk(MAX_DEPTH) }));
    const deep = await post({ query: typeWalk(MAX_DEPTH + 1) });
    expectRefused(deep, new RegExp(`nested too deeply \\(depth ${MAX_DEPTH + 1}\\); the limit is ${MAX_DEPTH} levels`));
    // Fragments are flattened, not a way around the limit.
    const viaFragments = await post({
      query: `{ __type(name: "Query") { ...A } } fragment A on __Type { ofType { ...B } } fragment B on __Type { ${'ofType { '.repeat(MAX_DEPTH - 2)}name${' }'.repeat(MAX_DEPTH - 2)} }`,
    });
    expectRefused(viaFragments, new RegExp(`nested too deeply \\(depth ${MAX_DEPTH + 1}\\)`));
  });

  it(`refuses more than ${MAX_ALIASES} aliases, and accepts ${MAX_ALIASES}`, async () => {
    const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `c${i}: notificationCounts { unreadCount }`).join(' ')} }`;
    const ok = expectData(await post({ query: aliased(MAX_ALIASES) }));
    expect(Object.keys(ok)).toHaveLength(MAX_ALIASES);
    expectRefused(
      await post({ query: aliased(MAX_ALIASES + 1) }),
      new RegExp(`too many aliases \\(${MAX_ALIASES + 1}\\); the limit is ${MAX_ALIASES}`),
    );
    // __typename aliases are free.
    expectData(await post({ query: `{ ${Array.from({ length: MAX_ALIASES + 5 }, (_, i) => `t${i}: __typename`).join(' ')} }` }));
  });

  it(`refuses an operation costing more than ${MAX_COST}, and accepts ${MAX_ALIASES} aliased full feed pages`, async () => {
    const expensive = await post({ query: `{ notifications { ${'total '.repeat(700)}} }` });
    expectRefused(expensive, new RegExp(`too expensive \\(cost \\d+\\); the limit is ${MAX_COST}`));
    const fields =
      'id notificationType isSeen title body createdAt seenAt contactId dealId noteId replyId taskId callId actionType actionTargetId';
    const pages = `{ ${Array.from({ length: MAX_ALIASES }, (_, i) => `p${i}: notifications(limit: 1) { notifications { ${fields} } total hasUnread nextCursor }`).join(' ')} }`;
    const data = expectData(await post({ query: pages }));
    expect(data.p0.total).toBe(2);
  });

  it(`refuses a document of more than ${MAX_TOKENS} tokens while parsing`, async () => {
    const result = await post({ query: `{ ${'__typename '.repeat(MAX_TOKENS)}}` });
    expectRefused(result, new RegExp(`more than ${MAX_TOKENS} tokens`));
    // A long document under the token limit (and under the cost limit: a root __typename costs 1) parses.
    expectData(await post({ query: `{ ${'__typename '.repeat(600)}}` }));
  });

  it('answers 400 to limit refusals when the caller accepts application/graphql-response+json', async () => {
    const result = await post({ query: typeWalk(MAX_DEPTH + 3) }, user.key, { accept: 'application/graphql-response+json' });
    expect(result.status).toBe(400);
    expectRefused(result, /nested too deeply/);
  });

  it('reports every limit an operation breaks, not only the first', async () => {
    const query = `{ ${Array.from({ length: MAX_ALIASES + 1 }, (_, i) => `c${i}: notificationCounts { unreadCount }`).join(' ')} deep: ${typeWalk(MAX_DEPTH + 2).slice(1, -1)} }`;
    const result = await post({ query });
    expectRefused(result, /too many aliases/);
    expectRefused(result, /nested too deeply/);
  });
});

describe('batching is off', () => {
  it('refuses a JSON array of operations with BAD_USER_INPUT and runs none of them', async () => {
    const before = (await post({ query: '{ notificationCounts { unreadCount } }' })).body.data.notificationCounts.unreadCount;
    const ids = (await post({ query: '{ notifications { notifications { id } } }' })).body.data.notifications.notifications.map(
      (n: { id: string }) => n.id,
    );
    const mark = {
      query: 'mutation($ids: [ID!]!) { markNotificationsRead(notificationIds: $ids, isSeen: true) { updatedCount } }',
      variables: { ids },
    };
    for (const batch of [[mark, mark], [mark], []]) {
      const result = await post(batch);
      expect(result.status).toBe(400);
      expectRefused(result, /Batching is not supported: send one operation per request/);
    }
    expect((await post({ query: '{ notificationCounts { unreadCount } }' })).body.data.notificationCounts.unreadCount).toBe(before);
  });
});

describe('introspection and credentials', () => {
  it('refuses callers without a valid credential with 401 UNAUTHENTICATED, introspection included', async () => {
    for (const bearer of [null, `gk_${'D'.repeat(40)}`, `stk_${'E'.repeat(40)}`, 'garbage']) {
      const result = await post({ query: getIntrospectionQuery() }, bearer);
      expect(result.status).toBe(401);
      expect(result.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(result.body.data).toBeUndefined();
    }
  });

  it("answers GraphiQL's full introspection query to a user key, a skip trace key and the platform (depth and cost skip __schema)", async () => {
    const query = getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
      oneOf: true,
    });
    for (const bearer of [user.key, skipTraceKey, service.platformToken]) {
      const data = expectData(await post({ query, operationName: 'IntrospectionQuery' }, bearer));
      expect(data.__schema.queryType.name).toBe('Query');
      expect(data.__schema.types.length).toBeGreaterThan(20);
    }
  });
});

describe('documents that must keep working', () => {
  it('runs each of the persisted gateway documents by documentId on /graphql', async () => {
    const variables: Record<string, Record<string, unknown>> = {
      getAvailableNotificationTypes: {},
      getNotificationCounts: {},
      listNotifications: { limit: 1 },
      markNotificationsRead: { notificationIds: [], isSeen: true },
      archiveNotifications: { notificationIds: [], archived: true },
      viewer: {},
      markAllNotificationsRead: { isSeen: false, notificationTypeFilter: 'no_such_type' },
      watchNotifications: {},
    };
    const seen: string[] = [];
    for (const [documentId, document] of Object.entries(manifest)) {
      const [, type, name] = /(query|mutation|subscription) (\w+)/.exec(document)!;
      seen.push(name);
      if (type !== 'subscription') {
        expectData(await post({ documentId, variables: variables[name] }));
        continue;
      }
      // A subscription is a stream: its first bytes are the opening comment.
      const response = await fetch(`${service.baseUrl}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${user.key}` },
        body: JSON.stringify({ documentId, variables: variables[name] }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const reader = response.body!.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toBe(':\n\n');
      await reader.cancel();
    }
    expect(seen.sort()).toEqual(Object.keys(variables).sort());
  });

  it('runs the gateway operations on /api/v1/call', async () => {
    const list = await service.call(user.key, { operationId: 'listNotifications', variables: { limit: 1 } });
    expect(list.status).toBe(200);
    expect(list.body.data.total).toBe(2);
    expect((await service.call(user.key, { operationId: 'getNotificationCounts' })).status).toBe(200);
    expect((await service.call(user.key, { operationId: 'getAvailableNotificationTypes' })).body.data.types.length).toBeGreaterThan(10);
    const mark = await service.call(user.key, {
      operationId: 'markNotificationsRead',
      variables: { notificationIds: [list.body.data.notifications[0].id], isSeen: true },
    });
    expect(mark.body.data).toEqual({ success: true, updatedCount: 1 });
    const viewer = await service.call(user.key, { operationId: 'viewer' });
    expect(viewer.body.data).toMatchObject({ principal: 'user', userId: user.userId, keyId: user.keyId });
    const markAll = await service.call(user.key, { operationId: 'markAllNotificationsRead', variables: { isSeen: true } });
    expect(markAll.body.data).toEqual({ success: true, updatedCount: 1 });
  });

  it('runs the skip trace document on /api/v1/skiptrace and the skipTrace mutation on /graphql', async () => {
    const address = { line1: `12 ${street} Rd`, city: 'Austin', state: 'tx', zip: '78701' };
    const rest = await service.request('/api/v1/skiptrace', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${skipTraceKey}` },
      body: JSON.stringify({ address }),
    });
    expect(rest.status).toBe(200);
    expect(rest.body.status).toBe('records_found');
    const gql = await post(
      {
        query:
          'mutation($input: SkipTraceInput!) { skipTrace(input: $input) { id status persons { firstName lastName middleName age phones { number type } emails } } }',
        variables: { input: { address } },
      },
      skipTraceKey,
    );
    expect(expectData(gql).skipTrace.persons[0].phones[0].number).toBe('5125550199');
  });

  // Found by the fuzzer once operations ran compiled (graphql-jit): these must keep graphql's own refusal.
  it('refuses a subscription and an unnamed choice of operations with BAD_USER_INPUT, and runs the one named', async () => {
    expectRefused(await post({ query: 'subscription { types }' }), /subscription/i);
    const two = 'query A { availableNotificationTypes { types { notificationType } } } query B { notificationCounts { unreadCount } }';
    expectRefused(await post({ query: two }), /determine what operation/i);
    expect(expectData(await post({ query: two, operationName: 'A' })).availableNotificationTypes.types.length).toBeGreaterThan(10);
  });

  it('serves GraphiQL outside production', async () => {
    const page = await service.request('/graphql', { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<html');
  });
});

describe('refusals before Yoga, in GraphQL shape', () => {
  it('answers unreadable bodies with 400 BAD_USER_INPUT, never the REST shape', async () => {
    for (const body of ['{', 'null', '"query"', '42', 'true', '{}', '']) {
      const result = await post(body);
      expect(result.status).toBe(400);
      expect(result.body.error).toBeUndefined();
      expectRefused(result, /not valid JSON|must be a JSON object/);
    }
    // `{"query":"<FF C3 28>"}`: invalid UTF-8 decodes to U+FFFD, which is not a GraphQL token.
    const invalidUtf8 = await service.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.key}` },
      body: Buffer.from([0x7b, 0x22, 0x71, 0x75, 0x65, 0x72, 0x79, 0x22, 0x3a, 0x22, 0xff, 0xc3, 0x28, 0x22, 0x7d]),
    });
    expectRefused(invalidUtf8, /Syntax Error|Unexpected character|Invalid character/);
  });

  it('answers a body over 4 MiB with 413 BAD_USER_INPUT', async () => {
    const result = await post({ query: `{ __typename } # ${'x'.repeat(4 * 1024 * 1024)}` });
    expect(result.status).toBe(413);
    expectRefused(result, /too large \(4 MiB on \/graphql\)/);
  });

  it('answers a body without query or documentId, and an unknown documentId, with BAD_USER_INPUT', async () => {
    expectRefused(await post({ variables: {} }), /needs "query" \(a GraphQL document\) or "documentId"/);
    expectRefused(await post({ documentId: 'sha256:nope' }), /No persisted document has this documentId/);
  });

  it('answers other methods with 405 and an unsatisfiable Accept with 406, both with a body', async () => {
    const put = await service.request('/graphql', { method: 'PUT', headers: { authorization: `Bearer ${user.key}` } });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expectRefused(put, /Use GET or POST/);
    // graphql-sse's single connection mode opens with a PUT: the answer says which mode is served.
    expectRefused(put, /distinct connections mode only[\s\S]*single connection mode \(a PUT reserving a stream\) is not supported/);
    const xml = await post({ query: '{ __typename }' }, user.key, { accept: 'application/xml' });
    expect(xml.status).toBe(406);
    expectRefused(xml, /Accept header/);
  });

  it('answers GET variables or extensions that are not JSON objects with 400 BAD_USER_INPUT, not INTERNAL', async () => {
    const get = (params: Record<string, string>) =>
      service.request(`/graphql?${new URLSearchParams(params)}`, { headers: { authorization: `Bearer ${user.key}` } });
    expectData(await get({ query: '{ __typename }', variables: '{}' }));
    for (const [params, message] of [
      [{ query: '{ __typename }', variables: ' x' }, /variables parameter is not valid JSON/],
      [{ query: '{ __typename }', variables: '[1]' }, /variables parameter must be a JSON object/],
      [{ query: '{ __typename }', extensions: '{' }, /extensions parameter is not valid JSON/],
    ] as const) {
      const result = await get(params);
      expect(result.status).toBe(400);
      expectRefused(result, message);
    }
  });

  it('refuses U+0000 in string literals and in GET variables as BAD_USER_INPUT, not INTERNAL', async () => {
    expectRefused(await post({ query: '{ notifications(searchTerm: "a\\u0000b") { total } }' }), /U\+0000/);
    expectRefused(await post({ query: '{ notifications(searchTerm: "\\u0000") { total } }' }, service.platformToken), /U\+0000/);
    const viaGet = await service.request(
      `/graphql?query=${encodeURIComponent('query($s: String) { notifications(searchTerm: $s) { total } }')}&variables=${encodeURIComponent(JSON.stringify({ s: 'a\u0000' }))}`,
      {
        headers: { authorization: `Bearer ${user.key}` },
      },
    );
    expectRefused(viaGet, /U\+0000/);
    expectRefused(await post({ query: '{ __typename }', variables: { s: '\u0000' } }), /U\+0000/);
  });
});

describe('masked errors', () => {
  it("returns a resolver's located AppError unchanged, so Yoga does not log a caller's mistake as an unexpected error", () => {
    const log = pino({ level: 'silent' });
    const appError = new AppError('not_found', 'No such organization.');
    const located = locatedError(appError, [], ['organization']);
    expect(maskError(located, log)).toBe(located);
    expect(maskError(located, log).extensions.code).toBe('NOT_FOUND');
    // Syntax and validation errors without a code get BAD_USER_INPUT; unexpected ones are masked.
    expect(maskError(new GraphQLError('Syntax Error: Unexpected "}".'), log).extensions.code).toBe('BAD_USER_INPUT');
    expect(maskError(locatedError(new TypeError('secret at 10.0.0.1'), [], ['x']), log).message).toBe('Unexpected error.');
  });

  it('answers an unexpected resolver failure as INTERNAL "Unexpected error." without its message', async () => {
    const orm = service.app.services.orm;
    const fork = orm.em.fork.bind(orm.em);
    const secret = 'connect ECONNREFUSED 10.9.8.7:5432 password=hunter2';
    // Every EntityManager of the next request fails, as a lost database would.
    orm.em.fork = ((...args: Parameters<typeof fork>) =>
      new Proxy(fork(...args), {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          return typeof value === 'function' &&
            ['execute', 'find', 'findOne', 'getConnection', 'flush', 'transactional'].includes(String(prop))
            ? () => {
                throw new Error(secret);
              }
            : value;
        },
      })) as typeof orm.em.fork;
    try {
      const result = await post({ query: `{ organization(id: "${randomUUID()}") { id name } }` }, service.platformToken);
      expect(result.status).toBeLessThan(500);
      expect(result.body.errors).toEqual([{ message: 'Unexpected error.', extensions: { code: 'INTERNAL' } }]);
      expect(result.text).not.toContain('hunter2');
      expect(result.text).not.toContain('10.9.8.7');
    } finally {
      orm.em.fork = fork;
    }
    expectData(await post({ query: '{ notificationCounts { unreadCount } }' }));
  });
});
