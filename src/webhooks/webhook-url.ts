/**
 * Where a webhook may be sent: `https://` to a host whose every address is public, after name
 * resolution. With `allowPrivate` (SKIPTRACE_WEBHOOK_ALLOW_PRIVATE, for development and tests)
 * also `http://`, loopback and private addresses. Link-local addresses (the cloud metadata
 * service at 169.254.169.254), unspecified, multicast and reserved ones are refused either way.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../common/errors.js';

/** A host name's addresses, as the system resolver (or a test's) gives them. */
export type Resolve = (hostname: string) => Promise<string[]>;

export interface WebhookUrlOptions {
  allowPrivate: boolean;
  /** Defaults to the system resolver (`getaddrinfo`, as a connection would resolve the name). */
  resolve?: Resolve;
}

/** An address a connection may be made to, as `net.connect`'s `lookup` hands it on. */
export interface CheckedAddress {
  address: string;
  family: 4 | 6;
}

/** A URL that may be called, with the addresses its host resolved to, every one of them checked. */
export interface WebhookTarget {
  url: URL;
  addresses: CheckedAddress[];
}

/** Why a URL may not be called, in words for the caller (and the delivery's record). */
export class WebhookUrlRefusal extends Error {}

const MAX_URL_LENGTH = 2048;
/** Name resolution that takes longer than this is treated as a failure: the caller is waiting. */
const RESOLVE_TIMEOUT_MS = 5000;

const PUBLIC_RANGES = new Set(['unicast']);
const PRIVATE_RANGES = new Set(['unicast', 'loopback', 'private', 'uniqueLocal', 'carrierGradeNat']);

export const systemResolve: Resolve = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** Why `address` may not be connected to, or null when it may. */
export function addressRefusal(address: string, allowPrivate: boolean): string | null {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.parse(address);
  } catch {
    return `${address} is not an IP address`;
  }
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) {
    // An IPv4 address in IPv6 clothing reaches the IPv4 host: judged as that host, and never public.
    if (!allowPrivate) return `${address} is an IPv4-mapped IPv6 address`;
    ip = (ip as ipaddr.IPv6).toIPv4Address();
  }
  const range = ip.range();
  return (allowPrivate ? PRIVATE_RANGES : PUBLIC_RANGES).has(range) ? null : `${address} is not a public address (${range})`;
}

async function resolveWithin(resolve: Resolve, hostname: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WebhookUrlRefusal(`${hostname} did not resolve in time`)), RESOLVE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([resolve(hostname), timeout]);
  } catch (error) {
    throw error instanceof WebhookUrlRefusal ? error : new WebhookUrlRefusal(`${hostname} does not resolve`);
  } finally {
    clearTimeout(timer);
  }
}

function parseWebhookUrl(text: string, allowPrivate: boolean): URL {
  if (text.length > MAX_URL_LENGTH) throw new WebhookUrlRefusal(`must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new WebhookUrlRefusal('is not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) throw new WebhookUrlRefusal('must be an https:// URL');
  if (url.username || url.password) throw new WebhookUrlRefusal('must not carry credentials');
  return url;
}

/**
 * The URL's host resolved, and every address checked; throws a `WebhookUrlRefusal` saying why not.
 * The URL parser has already turned numeric hosts (`2130706433`, `0x7f.1`, `0177.0.0.1`) into
 * dotted form, so a literal is checked as the address it is.
 */
export async function resolveWebhookTarget(text: string, options: WebhookUrlOptions): Promise<WebhookTarget> {
  const url = parseWebhookUrl(text, options.allowPrivate);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host) !== 0;
  const found = literal ? [host] : await resolveWithin(options.resolve ?? systemResolve, host);
  if (found.length === 0) throw new WebhookUrlRefusal(`${host} does not resolve`);
  const addresses: CheckedAddress[] = [];
  for (const address of found) {
    const refusal = addressRefusal(address, options.allowPrivate);
    if (refusal) throw new WebhookUrlRefusal(literal ? refusal : `${host} resolves to ${refusal}`);
    addresses.push({ address, family: isIP(address) === 4 ? 4 : 6 });
  }
  return { url, addresses };
}

/**
 * Throws `422 invalid_request` (details path `webhookUrl`) unless the URL may receive webhooks:
 * `https://` to a public address after name resolution (see `WebhookUrlOptions.allowPrivate`).
 * Answers the URL as the parser normalized it.
 */
export async function checkWebhookUrl(text: string, options: WebhookUrlOptions): Promise<string> {
  try {
    return (await resolveWebhookTarget(text, options)).url.href;
  } catch (error) {
    if (!(error instanceof WebhookUrlRefusal)) throw error;
    const message = `webhookUrl ${error.message}.`;
    throw new AppError('invalid_request', `The webhook URL is refused: ${message}`, [{ path: 'webhookUrl', message }]);
  }
}
