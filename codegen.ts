import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * Generates the gateway's persisted documents from `src/server/gateway/operations/*.graphql`, checked
 * against the printed schema. `npm run codegen` after changing an operation; a test fails while
 * the generated manifest is stale.
 */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['src/server/gateway/operations/*.graphql'],
  ignoreNoDocuments: false,
  // ESM output (`.js` in relative imports) for "module": "nodenext".
  importExtension: '.js',
  generates: {
    'src/server/gateway/__generated__/': {
      preset: 'client',
      presetConfig: {
        fragmentMasking: false,
        persistedDocuments: { mode: 'embedHashInDocument', hashAlgorithm: 'sha256' },
      },
      config: { documentMode: 'string', enumsAsTypes: true, useTypeImports: true },
    },
  },
};

export default config;
