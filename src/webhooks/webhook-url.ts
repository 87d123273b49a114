/** The SSRF guard: every resolved address must be public (docs/architecture.md, "The address guard"). */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../common/errors.js';

declare module '../schema/context.js' {
  interface Services {
    webhookUrls: WebhookUrlGuard;
  }
}

export type Resolve = (hostname: string) => Promise<string[]>;

export interface WebhookUrlOptions {
  allowPrivate: boolean;
  /** Defaults to `getaddrinfo`, as a connection would resolve the name. */
  resolve?: Resolve;
}

/** In the form `net.connect`'s `lookup` hands on. */
export interface CheckedAddress {
  address: string;
  family: 4 | 6;
}

export interface WebhookTarget {
  url: URL;
  addresses: CheckedAddress[];
}

/** Its message is shown to the caller and recorded on the delivery. */
export class WebhookUrlRefusal extends Error {}

const MAX_URL_LENGTH = 2048;
/** The caller is waiting. */
const RESOLVE_TIMEOUT_MS = 5000;

const PUBLIC_RANGES = new Set(['unicast']);
const PRIVATE_RANGES = new Set(['unicast', 'loopback', 'private', 'uniqueLocal', 'carrierGradeNat']);

export const systemResolve: Resolve = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

export function addressRefusal(address: string, allowPrivate: boolean): string | null {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.parse(address);
  } catch {
    return `${address} is not an IP address`;
  }
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) {
    // Reaches the IPv4 host, so it is judged as that host, and never public.
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

/** The URL parser already turned numeric hosts (`2130706433`, `0x7f.1`) into dotted form, so literals are checked as what they are. */
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

/** Answers the URL as the parser normalized it. */
export async function checkWebhookUrl(text: string, options: WebhookUrlOptions): Promise<string> {
  try {
    return (await resolveWebhookTarget(text, options)).url.href;
  } catch (error) {
    if (!(error instanceof WebhookUrlRefusal)) throw error;
    const message = `webhookUrl ${error.message}.`;
    throw new AppError('invalid_request', `The webhook URL is refused: ${message}`, [{ path: 'webhookUrl', message }]);
  }
}

/** One instance's options, shared by its deliveries so both checks agree. */
export interface WebhookUrlGuard {
  options: WebhookUrlOptions;
  check(url: string): Promise<string>;
}

export const createWebhookUrlGuard = (options: WebhookUrlOptions): WebhookUrlGuard => ({
  options,
  check: (url) => checkWebhookUrl(url, options),
});
