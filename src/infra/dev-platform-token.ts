import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Made on an embedded data dir's first start without INTERNAL_API_TOKEN, so the quick start can be administered. */
export const DEV_PLATFORM_TOKEN_FILE = 'platform-token';

export interface DevPlatformToken {
  token: string;
  /** Absent for a data dir in memory. */
  path?: string;
  /** Shown in full only when made by this start. */
  created: boolean;
}

const isInMemory = (dataDir: string) => dataDir.startsWith('memory://');

/** The admin CLI reads it too. */
export function readDevPlatformToken(dataDir: string): string | undefined {
  if (isInMemory(dataDir)) return undefined;
  try {
    const token = readFileSync(join(dataDir, DEV_PLATFORM_TOKEN_FILE), 'utf8').trim();
    return token.length >= 16 ? token : undefined;
  } catch {
    return undefined;
  }
}

/** Call with the data dir locked. */
export function ensureDevPlatformToken(dataDir: string): DevPlatformToken {
  const path = isInMemory(dataDir) ? undefined : join(dataDir, DEV_PLATFORM_TOKEN_FILE);
  const existing = readDevPlatformToken(dataDir);
  if (existing && path) {
    chmodSync(path, 0o600); // a copy restored with looser permissions is tightened again
    return { token: existing, path, created: false };
  }
  const token = `pt_dev_${randomBytes(24).toString('base64url')}`;
  if (path) {
    writeFileSync(path, `${token}\n`, { mode: 0o600 });
    chmodSync(path, 0o600); // the mode above applies only to a new file
  }
  return { token, path, created: true };
}
