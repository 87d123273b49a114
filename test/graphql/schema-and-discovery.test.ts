import { readFileSync } from 'node:fs';
import { generate } from '@graphql-codegen/cli';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import codegenConfig, { CLIENT_TYPES } from '../../codegen.js';
import { printedSchema } from '../../src/app/schema.js';
import { maskError } from '../../src/http/graphql/graphql-errors.js';
import { startService, type Provisioned, type TestService } from '../support/harness.js';

let service: TestService;
let user: Provisioned;
beforeAll(async () => {
  service = await startService();
  user = await service.provision({ scopes: ['READ'] });
});
afterAll(() => service?.close());

describe('checked-in artifacts', () => {
  it('schema.graphql is the printed, sorted schema (run `npm run schema:print` when this fails)', () => {
    expect(readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8')).toBe(printedSchema);
  });

  it('the persisted documents are what codegen.ts generates (run `npm run codegen` when this fails)', async () => {
    const outputs = await generate({ ...codegenConfig, silent: true, cwd: new URL('../..', import.meta.url).pathname }, false);
    const manifest = outputs.find((o: { filename: string }) => o.filename.endsWith('persisted-documents.json'));
    const checkedIn = readFileSync(new URL('../../src/http/gateway/__generated__/persisted-documents.json', import.meta.url), 'utf8');
    expect(JSON.parse(manifest.content)).toEqual(JSON.parse(checkedIn));
  });

  it('the typed client types are what codegen.ts generates (run `npm run codegen` when this fails)', async () => {
    const outputs = await generate({ ...codegenConfig, silent: true, cwd: new URL('../..', import.meta.url).pathname }, false);
    const types = outputs.find((o: { filename: string }) => o.filename.endsWith(CLIENT_TYPES));
    expect(types.content).toBe(readFileSync(new URL(`../../${CLIENT_TYPES}`, import.meta.url), 'utf8'));
    // Every published operation has its entry in the operation map, with its kind.
    for (const document of Object.values<string>(
      JSON.parse(readFileSync(new URL('../../src/http/gateway/__generated__/persisted-documents.json', import.meta.url), 'utf8')),
    )) {
      const [, kind, name] = /(query|mutation|subscription) (\w+)/.exec(document)!;
      expect(types.content).toMatch(new RegExp(`^  ${name}: \\{ operation: '${kind}'; variables: `, 'm'));
    }
  });
});

describe('discovery', () => {
  it('lists the operations with scope, type, description, document and JSON Schemas, without a credential', async () => {
    const result = await service.request('/api/v1/operations');
    expect(result.status).toBe(200);
    const byId = Object.fromEntries(result.body.operations.map((op: any) => [op.operationId, op]));
    expect(Object.keys(byId).sort()).toEqual([
      'archiveNotifications',
      'getAvailableNotificationTypes',
      'getNotificationCounts',
      'listNotifications',
      'markAllNotificationsRead',
      'markNotificationsRead',
      'viewer',
      'watchNotifications',
    ]);
    expect(byId.listNotifications).toMatchObject({ scope: 'READ', type: 'query' });
    expect(byId.viewer).toMatchObject({ scope: 'READ', type: 'query' });
    expect(byId.markNotificationsRead).toMatchObject({ scope: 'WRITE', type: 'mutation' });
    expect(byId.markAllNotificationsRead).toMatchObject({ scope: 'WRITE', type: 'mutation' });
    expect(byId.archiveNotifications).toMatchObject({ scope: 'WRITE', type: 'mutation' });
    expect(byId.getNotificationCounts).toMatchObject({ scope: 'READ', type: 'query' });
    expect(byId.watchNotifications).toMatchObject({ scope: 'READ', type: 'subscription' });
    for (const op of Object.values<any>(byId)) {
      expect(op.description.length).toBeGreaterThan(0);
      expect(op.document).toContain(op.operationId);
      expect(op.variables).toMatchObject({ type: 'object', additionalProperties: false });
      expect(op.result.type).toBe('object');
    }
    // Constraints come from the schema's argument definitions.
    expect(byId.listNotifications.variables.properties.limit).toMatchObject({ minimum: 1, maximum: 50, default: 25 });
    expect(byId.listNotifications.variables.properties.searchTerm).toMatchObject({ maxLength: 200 });
    expect(byId.markNotificationsRead.variables.required.sort()).toEqual(['isSeen', 'notificationIds']);
    expect(byId.markNotificationsRead.variables.properties.notificationIds).toMatchObject({ type: 'array', maxItems: 500 });
    expect(byId.markAllNotificationsRead.variables.required).toEqual(['isSeen']);
    expect(byId.archiveNotifications.variables.required.sort()).toEqual(['archived', 'notificationIds']);
    expect(byId.archiveNotifications.variables.properties.notificationIds).toMatchObject({ type: 'array', maxItems: 500 });
    expect(Object.keys(byId.archiveNotifications.result.properties).sort()).toEqual(['success', 'updatedCount']);
    expect(byId.listNotifications.variables.properties.archived).toMatchObject({ type: ['boolean', 'null'] });
    expect(Object.keys(byId.markAllNotificationsRead.variables.properties).sort()).toEqual(['isSeen', 'notificationTypeFilter']);
    expect(Object.keys(byId.markAllNotificationsRead.result.properties).sort()).toEqual(['success', 'updatedCount']);
    expect(Object.keys(byId.listNotifications.result.properties).sort()).toEqual(['hasUnread', 'nextCursor', 'notifications', 'total']);
  });

  it('describes one operation, and answers 404 unknown_operation for others', async () => {
    const one = await service.request('/api/v1/operations/getNotificationCounts');
    expect(one.status).toBe(200);
    expect(one.body.result.properties).toMatchObject({ unreadCount: { type: 'integer' }, readCount: { type: 'integer' } });
    expect(one.body.result.properties.byType).toMatchObject({
      type: 'array',
      items: {
        type: 'object',
        properties: { notificationType: { type: 'string' }, unreadCount: { type: 'integer' }, readCount: { type: 'integer' } },
      },
    });
    const none = await service.request('/api/v1/operations/nope');
    expect({ status: none.status, code: none.body.error.code }).toEqual({ status: 404, code: 'unknown_operation' });
  });

  it('serves the SDL to any valid credential only', async () => {
    expect((await service.request('/schema.graphql')).status).toBe(401);
    const bad = await service.request('/schema.graphql', { headers: { authorization: `Bearer gk_${'C'.repeat(40)}` } });
    expect({ status: bad.status, code: bad.body.error.code }).toEqual({ status: 401, code: 'invalid_key' });
    const ok = await service.request('/schema.graphql', { headers: { authorization: `Bearer ${user.key}` } });
    expect(ok.status).toBe(200);
    expect(ok.text).toBe(printedSchema);
  });

  it('answers /healthz and /readyz without a credential', async () => {
    expect((await service.request('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await service.request('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks.database).toBe('ok');
    expect(ready.body.checks.redis).toBe(process.env.REDIS_URL ? 'ok' : 'not configured');
  });
});

describe('/graphql', () => {
  const post = (body: unknown, bearer?: string) =>
    service.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify(body),
    });

  it('refuses callers without a valid credential, introspection included', async () => {
    for (const bearer of [undefined, `gk_${'D'.repeat(40)}`, 'garbage']) {
      const result = await post({ query: '{ __schema { queryType { name } } }' }, bearer);
      expect(result.status).toBe(401);
      expect(result.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
  });

  it('answers introspection and the feed for a valid key', async () => {
    const introspection = await post({ query: '{ __schema { queryType { name } } }' }, user.key);
    expect(introspection.body.data.__schema.queryType.name).toBe('Query');
    const feed = await post({ query: '{ notifications(limit: 5) { total hasUnread nextCursor } }' }, user.key);
    expect(feed.body.data.notifications).toEqual({ total: 0, hasUnread: false, nextCursor: null });
  });

  it('runs a persisted document by documentId, as the gateway does', async () => {
    const op = (await service.request('/api/v1/operations/getNotificationCounts')).body;
    const manifest = JSON.parse(
      readFileSync(new URL('../../src/http/gateway/__generated__/persisted-documents.json', import.meta.url), 'utf8'),
    );
    const documentId = Object.keys(manifest).find((id) => manifest[id] === op.document);
    const result = await post({ documentId, variables: {} }, user.key);
    expect(result.body.data.notificationCounts).toEqual({ unreadCount: 0, readCount: 0, byType: [] });
  });

  it('gives request errors the BAD_USER_INPUT code and resolver errors their own code', async () => {
    const invalid = await post({ query: '{ notifications { nope } }' }, user.key);
    expect(invalid.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const coercion = await post({ query: 'query($l: Int) { notifications(limit: $l) { total } }', variables: { l: 'x' } }, user.key);
    expect(coercion.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const range = await post({ query: '{ notifications(limit: 99) { total } }' }, user.key);
    expect(range.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const scope = await post({ query: 'mutation { markNotificationsRead(notificationIds: [], isSeen: true) { updatedCount } }' }, user.key);
    expect(scope.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('masks unexpected errors as INTERNAL without their message', () => {
    const masked = maskError(new Error('connection to 10.0.0.5 refused: password=hunter2'), pino({ level: 'silent' }));
    expect(masked.message).toBe('Unexpected error.');
    expect(masked.extensions.code).toBe('INTERNAL');
  });

  it('serves GraphiQL outside production', async () => {
    const page = await service.request('/graphql', { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<html');
  });
});
