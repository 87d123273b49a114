import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { expect } from 'vitest';
import { graphql, type ServiceProcess } from './spawn-service.js';

/** What the stream tests across processes share: a user with a key, a publish, a redis-server of their own. */

export async function provision(service: ServiceProcess) {
  const org = await graphql(
    service,
    `
      mutation {
        createOrganization(name: "Streams") {
          id
        }
      }
    `,
  );
  const user = await graphql(
    service,
    `
      mutation ($o: ID!, $e: String!) {
        createUser(organizationId: $o, email: $e) {
          id
        }
      }
    `,
    {
      o: org.body.data.createOrganization.id,
      e: `${randomUUID()}@example.com`,
    },
  );
  const userId = user.body.data.createUser.id as string;
  const key = await graphql(
    service,
    `
      mutation ($u: ID!) {
        createApiKey(userId: $u, scopes: [READ, WRITE]) {
          id
          secret
        }
      }
    `,
    { u: userId },
  );
  return { userId, keyId: key.body.data.createApiKey.id as string, key: key.body.data.createApiKey.secret as string };
}

export async function publishOne(service: ServiceProcess, userId: string, title: string) {
  const result = await graphql(
    service,
    `
      mutation ($input: [PublishNotificationInput!]!) {
        publishNotifications(input: $input) {
          id
        }
      }
    `,
    { input: [{ userId, notificationType: 'deal_created', title, body: 'Body' }] },
  );
  expect(result.body.errors).toBeUndefined();
  return result.body.data.publishNotifications[0].id as string;
}

/** A redis-server of this test's own (never the shared one), on `port`. */
export async function startRedis(port: number, args: string[] = ['--save', '', '--appendonly', 'no']): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', ...args], {
    stdio: 'ignore',
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = createServer().listen(port, '127.0.0.1');
      socket.once('listening', () => socket.close(() => resolve(false)));
      socket.once('error', () => resolve(true));
    });
    if (up) return child;
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
export const stopRedis = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
