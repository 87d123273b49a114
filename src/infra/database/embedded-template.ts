import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A migrated, empty database made by the build, unpacked instead of running initdb and every
 * migration on a first start. It holds no rows, so no secret is shared between installs.
 */
const TEMPLATE = new URL('./embedded-template.tar.gz', import.meta.url);
const MANIFEST = new URL('./embedded-template.json', import.meta.url);

interface Manifest {
  pglite: string;
  migrations: readonly string[];
}

/** PGlite's package.json is not exported, so it is found beside its entry point. */
function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const packageJson = join(entry.slice(0, entry.lastIndexOf(`${sep}dist${sep}`)), 'package.json');
  return (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
}

function readManifest(): Manifest | undefined {
  try {
    return JSON.parse(readFileSync(MANIFEST, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
}

/** Only with the same PGlite; the same build made the bundle, so the migrations match. */
export function embeddedTemplate(): Blob | undefined {
  const manifest = readManifest();
  if (manifest?.pglite !== pgliteVersion() || !existsSync(TEMPLATE)) return undefined;
  return new Blob([readFileSync(TEMPLATE)]);
}

export function templateIsCurrent(migrations: readonly string[]): boolean {
  const manifest = readManifest();
  return (
    !!manifest &&
    existsSync(TEMPLATE) &&
    manifest.pglite === pgliteVersion() &&
    manifest.migrations.length === migrations.length &&
    manifest.migrations.every((name, i) => name === migrations[i])
  );
}

/** Each file whole or not at all. */
export function writeEmbeddedTemplate(tarball: Uint8Array, migrations: readonly string[]): string {
  const whole = (file: URL, data: Uint8Array | string) => {
    const partial = `${fileURLToPath(file)}.${process.pid}.partial`;
    writeFileSync(partial, data);
    renameSync(partial, file);
  };
  whole(TEMPLATE, tarball);
  whole(MANIFEST, JSON.stringify({ pglite: pgliteVersion(), migrations } satisfies Manifest));
  return fileURLToPath(TEMPLATE);
}
