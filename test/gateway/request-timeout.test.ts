/**
 * README, Using the gateway: every response of a REST route carries X-RateLimit-Limit, -Remaining
 * and -Reset, a 408 too: a request whose body does not arrive within REQUEST_BODY_TIMEOUT_MS has
 * already spent a point of its window, and its answer says where that window stands.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setupBillingOrg } from '../support/billing.js';
import { startService, type Provisioned, type TestService } from '../support/harness.js';

let service: TestService;
let reader: Provisioned;
beforeAll(async () => {
  service = await startService({ REQUEST_BODY_TIMEOUT_MS: '500' });
  reader = await service.provision({ scopes: ['READ'] });
});
afterAll(() => service?.close());

/** Sends the head and half the body, then nothing: resolves with what the server wrote before closing. */
function sendHalfABody(path: string, key: string): Promise<string> {
  const body = JSON.stringify({ operationId: 'getNotificationCounts', variables: {} });
  const socket = connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
  );
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk) => (text += String(chunk)));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
  });
}

describe('408 request_timeout', () => {
  it('carries the rate-limit headers of the window the request spent, on the gateway and on skip trace', async () => {
    const { key } = await setupBillingOrg(service, 1);
    for (const [path, bearer, limit] of [
      ['/api/v1/call', reader.key, '1000'],
      ['/api/v1/skiptrace', key, '1000'],
    ] as const) {
      const text = await sendHalfABody(path, bearer);
      expect(text).toMatch(/^HTTP\/1\.1 408/);
      expect(text).toMatch(/"code":"request_timeout"/);
      expect(text).toMatch(new RegExp(`^x-ratelimit-limit: ${limit}\\r$`, 'im'));
      expect(text).toMatch(/^x-ratelimit-remaining: \d+\r$/im);
      expect(text).toMatch(/^x-ratelimit-reset: \d+\r$/im);
    }
  });
});
