/**
 * Every operation's scope cache is dropped once its result is complete, on every path that runs
 * the schema: the gateway, a REST route, `/graphql` through Yoga and through its fast path, and an
 * operation that fails. Pothos keeps that cache in a process-wide WeakMap keyed by the context;
 * left there, each request survived the young generation's collections (releaseContext in
 * src/schema/context.ts says why), which no answer shows, so this test watches the cache itself.
 */
import { RequestCache } from '@pothos/plugin-scope-auth';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { publish, startService, type Provisioned, type TestService } from '../support/harness.js';

let service: TestService;
let user: Provisioned;
const cached = new Set<object>();
const released = new Set<object>();

beforeAll(async () => {
  service = await startService();
  user = await service.provision({ scopes: ['READ', 'WRITE'] });
  await publish(service, user.userId, [{ title: 'One' }, { title: 'Two' }]);
  const fromContext = RequestCache.fromContext.bind(RequestCache);
  const clearForContext = RequestCache.clearForContext.bind(RequestCache);
  vi.spyOn(RequestCache, 'fromContext').mockImplementation((context, builder) => {
    cached.add(context);
    return fromContext(context, builder);
  });
  vi.spyOn(RequestCache, 'clearForContext').mockImplementation((context) => {
    released.add(context);
    clearForContext(context);
  });
});
afterAll(async () => {
  vi.restoreAllMocks();
  await service?.close();
});

const FEED = 'query { notifications(limit: 5) { total notifications { id title } } }';
const graphql = (query: string) => service.graphql(query, {}, user.key);

it('drops the scope cache of every operation once it has answered, whichever path ran it', async () => {
  expect((await service.call(user.key, { operationId: 'listNotifications', variables: { limit: 5 } })).status).toBe(200);
  expect((await service.call(user.key, { operationId: 'getNotificationCounts', variables: {} })).status).toBe(200);
  expect((await service.request('/api/v1/skiptrace/account', { headers: { authorization: `Bearer ${user.key}` } })).status).toBeLessThan(
    500,
  );
  // Yoga on the first two, the fast path from the third (fast-path.test.ts).
  for (let i = 0; i < 4; i++) expect((await graphql(FEED)).status).toBe(200);
  // A field the key's scopes do not allow: the operation fails, its cache still goes.
  expect((await graphql('query { organizations { nodes { id } } }')).body.errors?.length).toBeGreaterThan(0);

  expect(cached.size).toBeGreaterThanOrEqual(7);
  expect([...cached].filter((context) => !released.has(context))).toEqual([]);
});
