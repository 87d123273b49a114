/**
 * Where a webhook may go (`checkWebhookUrl`): `https://` to a host whose every resolved address
 * is public; `allowPrivate` (SKIPTRACE_WEBHOOK_ALLOW_PRIVATE) also allows `http://`, loopback and
 * private addresses, never link-local (the metadata service) or unspecified ones. A refusal is
 * `422 invalid_request` with the detail path `webhookUrl`.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/common/errors.js';
import { checkWebhookUrl, type Resolve } from '../../src/webhooks/index.js';

const PUBLIC_V4 = '93.184.216.34';
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946';

/** A resolver answering from a table; any other name does not resolve. */
const resolver =
  (table: Record<string, string[]>): Resolve =>
  async (hostname) => {
    const found = table[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };

const names = resolver({
  'public.example': [PUBLIC_V4, PUBLIC_V6],
  'mixed.example': [PUBLIC_V4, '10.1.2.3'],
  'metadata.example': ['169.254.169.254'],
  'loopback.example': ['127.0.0.1'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'empty.example': [],
});

async function refusal(url: string, allowPrivate = false): Promise<AppError> {
  const error = await checkWebhookUrl(url, { allowPrivate, resolve: names }).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error, `${url} should be refused`).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('checkWebhookUrl without SKIPTRACE_WEBHOOK_ALLOW_PRIVATE', () => {
  it('accepts https:// to a public address, literal or resolved (every address public)', async () => {
    const options = { allowPrivate: false, resolve: names };
    expect(await checkWebhookUrl('https://public.example/hooks?token=x', options)).toBe('https://public.example/hooks?token=x');
    expect(await checkWebhookUrl(`https://${PUBLIC_V4}:8443/`, options)).toBe(`https://${PUBLIC_V4}:8443/`);
    expect(await checkWebhookUrl(`https://[${PUBLIC_V6}]/`, options)).toBe(`https://[${PUBLIC_V6}]/`);
  });

  it('refuses with 422 invalid_request, details path webhookUrl', async () => {
    const error = await refusal('https://127.0.0.1/hook');
    expect(error.kind).toBe('invalid_request');
    expect(error.status).toBe(422);
    expect(error.details).toEqual([{ path: 'webhookUrl', message: expect.stringContaining('127.0.0.1') }]);
  });

  it.each([
    'http://public.example/hook',
    'ftp://public.example/hook',
    'not a url',
    '/relative/path',
    'https://user:pass@public.example/',
    `https://public.example/${'a'.repeat(2100)}`,
  ])('refuses %s (scheme, shape, credentials, length)', async (url) => {
    expect((await refusal(url)).details?.[0].path).toBe('webhookUrl');
  });

  it.each([
    ['loopback', 'https://127.0.0.1/'],
    ['loopback (other)', 'https://127.8.9.10/'],
    ['private 10/8', 'https://10.0.0.1/'],
    ['private 172.16/12', 'https://172.16.5.4/'],
    ['private 192.168/16', 'https://192.168.1.1/'],
    ['link-local (cloud metadata)', 'https://169.254.169.254/latest/meta-data/'],
    ['carrier-grade NAT', 'https://100.64.0.1/'],
    ['unspecified', 'https://0.0.0.0/'],
    ['multicast', 'https://224.0.0.1/'],
    ['broadcast', 'https://255.255.255.255/'],
    ['reserved (documentation)', 'https://192.0.2.1/'],
    ['IPv6 loopback', 'https://[::1]/'],
    ['IPv6 unspecified', 'https://[::]/'],
    ['IPv6 unique-local', 'https://[fd00::1]/'],
    ['IPv6 link-local', 'https://[fe80::1]/'],
    ['IPv4-mapped IPv6 loopback', 'https://[::ffff:127.0.0.1]/'],
    ['IPv4-mapped IPv6 metadata', 'https://[::ffff:a9fe:a9fe]/'],
    ['NAT64 of loopback', 'https://[64:ff9b::7f00:1]/'],
    ['decimal loopback', 'https://2130706433/'],
    ['octal loopback', 'https://0177.0.0.1/'],
    ['hex loopback', 'https://0x7f.0.0.1/'],
    ['hex integer loopback', 'https://0x7f000001/'],
    ['short form loopback', 'https://127.1/'],
    ['decimal metadata', 'https://2852039166/'],
  ])('refuses %s (%s)', async (_what, url) => {
    await refusal(url);
  });

  it('refuses names whose addresses are not all public, and names that do not resolve', async () => {
    for (const name of ['mixed', 'metadata', 'loopback', 'mapped', 'empty', 'unknown']) await refusal(`https://${name}.example/hook`);
    // The system resolver: localhost is loopback.
    await expect(checkWebhookUrl('https://localhost/hook', { allowPrivate: false })).rejects.toBeInstanceOf(AppError);
  });
});

describe('checkWebhookUrl with SKIPTRACE_WEBHOOK_ALLOW_PRIVATE=true', () => {
  it('also accepts http:// and loopback or private addresses', async () => {
    const options = { allowPrivate: true, resolve: names };
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://10.1.2.3/',
      'https://192.168.0.10/',
      'http://[::1]:9000/',
      'http://[fd12::1]/',
      'http://mixed.example/',
      'http://loopback.example/',
      'http://mapped.example/',
    ])
      await expect(checkWebhookUrl(url, options), url).resolves.toBeTruthy();
  });

  it('still refuses the metadata service, unspecified and multicast addresses, and other schemes', async () => {
    for (const url of [
      'http://169.254.169.254/',
      'http://metadata.example/',
      'http://0.0.0.0/',
      'http://[::]/',
      'http://224.0.0.1/',
      'http://[fe80::1]/',
      'ftp://127.0.0.1/',
    ])
      await refusal(url, true);
  });
});
