import { afterAll, beforeAll, expect, it } from 'vitest';
import { publish, startService, type TestService } from '../support/harness.js';

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

it('lists a provisioned user feed through the gateway', async () => {
  const user = await service.provision();
  await publish(service, user.userId, [{ title: 'a' }, { title: 'b' }]);
  const result = await service.call(user.key, { operationId: 'listNotifications', variables: {} });
  expect(result.status).toBe(200);
  expect(result.body.data.total).toBe(2);
  expect(result.body.data.notifications.map((n: any) => n.title)).toEqual(['b', 'a']);
});
