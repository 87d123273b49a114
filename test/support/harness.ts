import { randomBytes, randomUUID } from 'node:crypto';
import type { DestinationStream } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { createLogger } from '../../src/infra/logger.js';
import { buildApp, type App } from '../../src/app/app.js';
import { loadConfig } from '../../src/infra/config.js';
import { responseProblem } from './openapi-responses.js';

/**
 * Starts the real service on an ephemeral port. With DATABASE_URL / REDIS_URL set (CI) it uses
 * those servers; otherwise an in-memory PGlite and in-process windows, the embedded mode.
 */
export interface TestService {
  app: App;
  baseUrl: string;
  platformToken: string;
  close(): Promise<void>;
  /** A GraphQL request with the platform token (or another bearer). */
  graphql(query: string, variables?: Record<string, unknown>, bearer?: string): Promise<{ status: number; body: any }>;
  /** `POST /api/v1/call`. */
  call(bearer: string | null, body: unknown, init?: { headers?: Record<string, string> }): Promise<HttpResult>;
  request(path: string, init?: RequestInit): Promise<HttpResult>;
  sql<T = any>(query: string, params?: unknown[]): Promise<T[]>;
  provision(options?: { role?: 'ADMIN' | 'MEMBER'; scopes?: string[]; organizationId?: string }): Promise<Provisioned>;
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface Provisioned {
  organizationId: string;
  userId: string;
  keyId: string;
  key: string;
}

export const usingRealBackends = Boolean(process.env.DATABASE_URL);

export async function startService(
  env: Record<string, string> = {},
  options: { logDestination?: DestinationStream; app?: Parameters<typeof buildApp>[2] } = {},
): Promise<TestService> {
  const platformToken = `pt_${randomBytes(24).toString('hex')}`;
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: process.env.DATABASE_URL ?? '',
    DATABASE_PREPARED_STATEMENTS: process.env.DATABASE_PREPARED_STATEMENTS ?? '',
    REDIS_URL: process.env.REDIS_URL ?? '',
    DATA_DIR: 'memory://',
    INTERNAL_API_TOKEN: platformToken,
    // Tests share 127.0.0.1; the auth-failure window has its own test with a private client IP.
    AUTH_FAILURE_LIMIT_PER_MIN: '100000',
    HOST: '127.0.0.1',
    PORT: '0',
    // Tests backfill rows dated long ago: the retention sweep is tested on its own.
    NOTIFICATION_RETENTION_DAYS: '0',
    ...env,
  });
  const app = await buildApp(config, createLogger(config.logLevel, options.logDestination), options.app);
  await app.http.listen({ port: 0, host: '127.0.0.1' });
  const address = app.http.server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  // The service's own OpenAPI document, asked for once: every response below is checked against it.
  let openApiDocument: Promise<any> | undefined;
  const documented = () => (openApiDocument ??= fetch(`${baseUrl}/openapi.json`).then((response) => response.json()));

  const request = async (path: string, init: RequestInit = {}): Promise<HttpResult> => {
    const response = await fetch(baseUrl + path, init);
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const problem = responseProblem(await documented(), {
      method: (init.method ?? 'GET').toUpperCase(),
      url: response.url,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body,
      text,
    });
    if (problem) throw new Error(`Response not as the OpenAPI document describes it: ${problem}`);
    return { status: response.status, headers: response.headers, body, text };
  };

  const graphql: TestService['graphql'] = async (query, variables = {}, bearer = platformToken) => {
    const result = await request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ query, variables }),
    });
    return { status: result.status, body: result.body };
  };

  const service: TestService = {
    app,
    baseUrl,
    platformToken,
    close: () => app.close(),
    graphql,
    request,
    call: (bearer, body, init = {}) =>
      request('/api/v1/call', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...init.headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    sql: (query, params = []) => app.services.orm.em.fork().execute(query, params) as Promise<any[]>,
    async provision(options = {}) {
      let organizationId = options.organizationId;
      if (!organizationId) {
        const org = await graphql(
          `
            mutation ($name: String!) {
              createOrganization(name: $name) {
                id
              }
            }
          `,
          { name: `Org ${randomUUID()}` },
        );
        organizationId = org.body.data.createOrganization.id as string;
      }
      const user = await graphql(
        `
          mutation ($org: ID!, $email: String!, $role: UserRole!) {
            createUser(organizationId: $org, email: $email, role: $role) {
              id
            }
          }
        `,
        {
          org: organizationId,
          email: `${randomUUID()}@example.com`,
          role: options.role ?? 'MEMBER',
        },
      );
      const userId = user.body.data.createUser.id as string;
      const key = await graphql(
        `
          mutation ($user: ID!, $scopes: [Scope!]!) {
            createApiKey(userId: $user, scopes: $scopes) {
              id
              secret
            }
          }
        `,
        {
          user: userId,
          scopes: options.scopes ?? ['READ', 'WRITE'],
        },
      );
      return { organizationId, userId, keyId: key.body.data.createApiKey.id, key: key.body.data.createApiKey.secret };
    },
  };
  return service;
}

/** Publishes notifications for a user through the platform mutation; returns their ids. */
export async function publish(service: TestService, userId: string, items: Array<Record<string, unknown>>): Promise<string[]> {
  const result = await service.graphql(`mutation($input: [PublishNotificationInput!]!) { publishNotifications(input: $input) { id } }`, {
    input: items.map((item) => ({ notificationType: 'deal_created', title: 'Title', body: 'Body', ...item, userId })),
  });
  if (!result.body.data) throw new Error(JSON.stringify(result.body.errors));
  return result.body.data.publishNotifications.map((n: { id: string }) => n.id);
}

/** Starts a service (`assign`ed) before the file's tests; after them, closes the streams in `open`, then the service. */
export function useStreamingService(assign: (service: TestService) => void, open: Array<{ close(): void }>) {
  let started: TestService | undefined;
  beforeAll(async () => assign((started = await startService())));
  afterAll(async () => {
    for (const stream of open) stream.close();
    await started?.close();
  });
}
