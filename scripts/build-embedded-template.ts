/**
 * The build's last step (`npm run build`): makes `dist/embedded-template.tar.gz`, a migrated, empty
 * embedded database that a new data dir is unpacked from (src/infra/database/embedded-template.ts).
 * Bundled beside the service, so the template lands where the bundle looks for it; skipped when
 * the template is already made from these migrations by this PGlite.
 */
import { migrationsList } from '../migrations/index.js';
import { startEmbeddedEngine } from '../src/infra/database/embedded-engine.js';
import { templateIsCurrent, writeEmbeddedTemplate } from '../src/infra/database/embedded-template.js';
import { openDatabase } from '../src/infra/database/orm.js';

const names = migrationsList.map((migration) => migration.name);
if (!templateIsCurrent(names)) {
  const started = performance.now();
  const config = { kind: 'embedded', dataDir: 'memory://' } as const;
  const engine = await startEmbeddedEngine(config);
  const database = await openDatabase(config, undefined, Promise.resolve(engine));
  // Everything on disk before the dump, so the tarball needs no WAL replay when it is opened.
  await engine.pglite.exec('checkpoint');
  const tarball = new Uint8Array(await (await engine.pglite.dumpDataDir('gzip')).arrayBuffer());
  await database.close();
  const path = writeEmbeddedTemplate(tarball, names);
  console.log(
    `embedded template: ${path} (${(tarball.length / 1e6).toFixed(1)} MB, ${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
}
