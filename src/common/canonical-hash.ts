import { hash } from 'node:crypto';

export type Json = string | number | boolean | null | readonly Json[] | { readonly [key: string]: Json };

/** Keys sorted at every level, so equal values hash equally whatever their property order. */
export function canonicalHash(value: Json): string {
  return hash('sha256', canonicalJson(value), 'hex');
}

function canonicalJson(value: Json): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as { readonly [key: string]: Json }).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
