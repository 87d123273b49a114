import { copyFileSync, rmSync } from 'node:fs';
import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * Generates the gateway's persisted documents from `src/server/gateway/operations/*.graphql`, checked
 * against the printed schema. `npm run codegen` after changing an operation; a test fails while
 * the generated manifest is stale.
 *
 * The client preset also writes typed documents (`gql.ts`, `graphql.ts`), which nothing imports and
 * which the manifest needs while it is generated: they go to a scratch folder under `node_modules`,
 * and only the manifest is copied out.
 */
const SCRATCH = 'node_modules/.cache/graphql-codegen/';
const MANIFEST = 'persisted-documents.json';
const TARGET = 'src/server/gateway/__generated__/persisted-documents.json';

const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['src/server/gateway/operations/*.graphql'],
  ignoreNoDocuments: false,
  generates: {
    [SCRATCH]: {
      preset: 'client',
      presetConfig: {
        fragmentMasking: false,
        skipIndexFile: true,
        persistedDocuments: { mode: 'embedHashInDocument', hashAlgorithm: 'sha256' },
      },
      config: { documentMode: 'string' },
    },
  },
  hooks: {
    // Only `npm run codegen` writes files (the staleness test generates in memory); this runs after it has.
    afterAllFileWrite: () => {
      copyFileSync(`${SCRATCH}${MANIFEST}`, TARGET);
      rmSync(SCRATCH, { recursive: true, force: true });
    },
  },
};

export default config;
