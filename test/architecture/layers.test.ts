import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Imports point one way (docs/architecture.md): infrastructure and common code at the bottom, the
 * schema base over them, the domains over the base, the server (assembly, Yoga, routes) over the
 * domains, and the entry point on top. A file may import its own layer or any layer below it.
 */
const LAYERS: Array<{ name: string; folders: string[] }> = [
  { name: 'infrastructure', folders: ['src/common', 'src/infra'] },
  { name: 'schema base', folders: ['src/schema'] },
  {
    name: 'domains',
    folders: [
      'src/address',
      'src/auth',
      'src/organizations',
      'src/notifications',
      'src/billing',
      'src/property-records',
      'src/skip-trace',
      'src/webhooks',
    ],
  },
  { name: 'HTTP edge', folders: ['src/http'] },
  { name: 'API reference', folders: ['src/reference'] },
  { name: 'composition root', folders: ['src/app'] },
  { name: 'entry point', folders: ['src/main.ts'] },
  { name: 'clients', folders: ['src/cli'] },
];

/**
 * The admin CLI is a client of the running service over HTTP: besides itself it may use only the
 * pure rules it shares with the service (address standardization to group CSV rows, the record
 * validation to name a bad row's line before sending it) and the reader of a quick-start data
 * dir's development platform token; never the database, config or server.
 */
const CLI_MAY_IMPORT = [
  'src/cli/',
  'src/address/',
  'src/property-records/property-records.validation.ts',
  'src/infra/dev-platform-token.ts',
];

/** Imports that run upward on purpose, each with its reason. */
const ALLOWED_UPWARD: Record<string, string> = {
  // MikroORM's config must list every entity; this registry is the one place that knows them all.
  'src/infra/database/entities.ts': 'the entity registry',
};

const root = normalize(join(dirname(fileURLToPath(import.meta.url)), '../..'));

function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === '__generated__' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function layerOf(file: string): number {
  const index = LAYERS.findIndex((layer) => layer.folders.some((folder) => file === folder || file.startsWith(`${folder}/`)));
  if (index < 0) throw new Error(`${file} belongs to no layer: add its folder to LAYERS.`);
  return index;
}

/** Relative imports of a file, `import type` and `declare module` included, as repository paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bdeclare module\s+|^import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)].map(
    (m) => m[1],
  );
  return specifiers.map((specifier) => relative(root, join(root, dirname(file), specifier)).replace(/\.js$/, '.ts'));
}

describe('layers', () => {
  const files = sourceFiles('src');

  it('every source file belongs to a layer', () => {
    for (const file of files) expect(() => layerOf(file)).not.toThrow();
  });

  it('no file imports a layer above its own', () => {
    const upward: string[] = [];
    for (const file of files) {
      if (ALLOWED_UPWARD[file]) continue;
      for (const target of importsOf(file)) {
        if (!target.startsWith('src/')) continue;
        if (layerOf(target) > layerOf(file))
          upward.push(`${file} (${LAYERS[layerOf(file)].name}) imports ${target} (${LAYERS[layerOf(target)].name})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('the admin CLI imports nothing from src/ but itself and the rules it shares with the service', () => {
    const reaching = files
      .filter((file) => file.startsWith('src/cli/'))
      .flatMap((file) => importsOf(file).map((target) => `${file} imports ${target}`))
      .filter((edge) => {
        const target = edge.split(' imports ')[1];
        return target.startsWith('src/') && !CLI_MAY_IMPORT.some((allowed) => target.startsWith(allowed));
      });
    expect(reaching).toEqual([]);
  });

  it('finds the imports it checks', () => {
    // Guards the check itself: a regex that matched nothing would pass vacuously.
    expect(importsOf('src/app/app.ts')).toContain('src/infra/database/orm.ts');
    expect(importsOf('src/skip-trace/admission.ts')).toContain('src/schema/context.ts');
    expect(importsOf('src/cli/commands/records.ts')).toContain('src/cli/records/read-records.ts');
  });
});
