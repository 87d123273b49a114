import { expect } from 'vitest';
import type { HttpResult, Provisioned, TestService } from './harness.js';

/**
 * Gateway calls that alternate between two instances (the same one twice on embedded), so that
 * the state a test builds must hold across instances; each call expects a 200 and returns `data`.
 */
export function alternatingGateway(instances: () => [TestService, TestService]) {
  let turn = 0;
  const ok = (result: HttpResult) => {
    expect(result.status, result.text).toBe(200);
    return result.body.data;
  };
  const call = async (user: Provisioned, operationId: string, variables: Record<string, unknown> = {}) =>
    ok(await instances()[turn++ % 2]!.call(user.key, { operationId, variables }));
  const markAll = async (user: Provisioned, variables: Record<string, unknown>): Promise<number> =>
    (await call(user, 'markAllNotificationsRead', variables)).updatedCount;
  const markIds = async (user: Provisioned, notificationIds: string[], isSeen: boolean): Promise<number> =>
    (await call(user, 'markNotificationsRead', { notificationIds, isSeen })).updatedCount;
  return { call, markAll, markIds };
}
