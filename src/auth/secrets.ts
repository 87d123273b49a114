import { hash, randomInt, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_BODY_LENGTH = 40;

export type SecretPrefix = 'gk_' | 'stk_';

export function generateSecret(prefix: SecretPrefix): string {
  let body = '';
  for (let i = 0; i < SECRET_BODY_LENGTH; i++) body += BASE62[randomInt(BASE62.length)];
  return prefix + body;
}

/** Checked before any lookup. */
export function isWellFormedSecret(value: string, prefix: SecretPrefix): boolean {
  return (
    value.length === prefix.length + SECRET_BODY_LENGTH && value.startsWith(prefix) && /^[0-9A-Za-z]+$/.test(value.slice(prefix.length))
  );
}

/** Keys are high-entropy random strings, so an unsalted SHA-256 is a sufficient at-rest hash. */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** The only part of a key shown after issue. */
export function secretHint(secret: string): string {
  return `${secret.slice(0, 8)}…${secret.slice(-4)}`;
}

/** Hashed first so secrets of any length compare in constant time. */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(hash('sha256', a, 'buffer'), hash('sha256', b, 'buffer'));
}

export function hashesEqual(storedHex: string, presentedHex: string): boolean {
  const a = Buffer.from(storedHex, 'hex');
  const b = Buffer.from(presentedHex, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
