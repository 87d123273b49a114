// @ts-check
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

/** Lint rules for the whole repository; formatting is Prettier's (`npm run format`), so its conflicting rules are off. */
export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'data/',
      'bench/.data/',
      'bench/results/',
      'src/http/gateway/__generated__/',
      'examples/client/__generated__/',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // `!` stands where the code has just proven presence (a map filled the line before, a key checked above).
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'off',
    },
  },
  {
    files: ['test/**'],
    rules: {
      // Tests read answers of any shape (JSON bodies, raw rows) and assert on them field by field.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  prettier,
);
