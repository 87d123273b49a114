import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A migrated, empty embedded database as a tarball, made by the build (`npm run build`) beside the
 * bundle: a new data dir is unpacked from it instead of PGlite's own initdb and every migration,
 * most of a first start's time. It holds no rows, so no secret is shared between installs.
 */
const TEMPLATE = new URL('./embedded-template.tar.gz', import.meta.url);
/** What the tarball was made from: PGlite's version and the migrations it ran. */
const MANIFEST = new URL('./embedded-template.json', import.meta.url);

interface Manifest {
  pglite: string;
  migrations: readonly string[];
}

/** The installed PGlite's version (its package.json is not exported: found beside its entry point). */
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

/**
 * The template for a new data dir, when the build made one with this PGlite (made by the same build
 * as the bundle, it ran exactly the bundle's migrations); otherwise none, and the dir starts empty.
 */
export function embeddedTemplate(): Blob | undefined {
  const manifest = readManifest();
  if (manifest?.pglite !== pgliteVersion() || !existsSync(TEMPLATE)) return undefined;
  return new Blob([readFileSync(TEMPLATE)]);
}

/** Whether the template on disk was made from exactly these migrations by this PGlite. */
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

/** Writes the template and its manifest beside this module (the build's output dir), each whole or not at all. */
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
