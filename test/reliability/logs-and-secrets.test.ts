import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendor, type FakeVendor } from '../support/fake-vendor.js';
import { startService, type TestService } from '../support/harness.js';

const lines: string[] = [];
const capture = new Writable({
  write(chunk, _encoding, done) {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    done();
  },
});

let vendor: FakeVendor;
let service: TestService;
beforeAll(async () => {
  vendor = await startFakeVendor();
  service = await startService(
    { LOG_LEVEL: 'trace', SKIPTRACE_PROVIDER: 'http', SKIPTRACE_PROVIDER_URL: vendor.url, SKIPTRACE_PROVIDER_KEY: vendor.apiKey },
    { logDestination: capture },
  );
});
afterAll(async () => {
  await service?.close();
  await vendor?.close();
});

describe('logs and secrets', () => {
  it('never writes a key, the platform token or the vendor key to the logs, under traffic that uses and refuses them', async () => {
    const secrets: string[] = [service.platformToken, vendor.apiKey];
    const user = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'] });
    secrets.push(user.key);
    const org = user.organizationId;
    await service.graphql(`mutation($o: ID!) { addSkipTraceCredits(organizationId: $o, amount: 10, reference: "r") { id } }`, { o: org });
    const first = await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: org });
    const rotated = await service.graphql(`mutation($o: ID!) { rotateSkipTraceKey(organizationId: $o) { secret } }`, { o: org }, user.key);
    const stkOld = first.body.data.generateSkipTraceKey.secret as string;
    const stk = rotated.body.data.rotateSkipTraceKey.secret as string;
    const guessed = `gk_${'Z'.repeat(40)}`;
    secrets.push(stkOld, stk, guessed);

    const trace = (key: string, body: unknown) =>
      service.request('/api/v1/skiptrace', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const address = { line1: '1 Secret Way', city: 'Austin', state: 'TX', zip: '78701' };

    expect((await service.call(user.key, { operationId: 'listNotifications' })).status).toBe(200);
    expect((await service.call(guessed, { operationId: 'listNotifications' })).status).toBe(401);
    expect((await service.call(user.key, '{"broken')).status).toBe(422);
    expect((await trace(stk, { address })).status).toBe(200);
    expect((await trace(stkOld, { address })).status).toBe(401);
    vendor.setMode('failing');
    expect((await trace(stk, { address: { ...address, line1: '2 Secret Way' } })).status).toBe(500);
    expect((await service.graphql('{ __typename }', {}, guessed)).status).toBe(401);
    expect((await service.graphql('{ organization(id: "x") { id } }')).status).toBe(200);

    const text = lines.join('\n');
    expect(lines.length).toBeGreaterThan(20);
    for (const secret of secrets) expect(text).not.toContain(secret);
    // Not even the body of a key (without its prefix) leaks.
    for (const secret of secrets.filter((s) => /^(gk|stk)_/.test(s))) expect(text).not.toContain(secret.replace(/^(gk|stk)_/, ''));
    expect(text).not.toMatch(/Bearer /);
  });

  it('puts a request id on every line written while serving a request, and on the response', async () => {
    const before = lines.length;
    const result = await service.call(null, { operationId: 'listNotifications' }, { headers: { 'x-request-id': 'trace-me-42' } });
    expect(result.headers.get('x-request-id')).toBe('trace-me-42');
    expect(result.body.error.requestId).toBe('trace-me-42');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const written = lines.slice(before).map((line) => JSON.parse(line));
    expect(written.length).toBeGreaterThan(0);
    expect(written.every((entry) => entry.reqId === 'trace-me-42')).toBe(true);
  });

  it('sends no X-Powered-By header', async () => {
    const result = await service.request('/healthz');
    expect(result.headers.get('x-powered-by')).toBeNull();
  });
});
