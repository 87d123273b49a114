import { createHash } from 'node:crypto';
import { getOperationAST, type DocumentNode, type ExecutionArgs, type SelectionSetNode } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import { fieldsOf, fragmentsOf } from './selections.js';

/**
 * Compiled execution (graphql-jit) for the documents `/graphql` callers repeat. A compiled
 * document costs memory per field it selects (docs/scaling.md), so it is compiled on its second
 * request only, only up to MAX_COMPILED_FIELDS fields, and kept in an LRU bounded in bytes.
 */
export const MAX_COMPILED_FIELDS = 150;
export const COMPILED_CACHE_MAX_ENTRIES = 200;
export const COMPILED_CACHE_MAX_BYTES = 16 * 1024 * 1024;
const COMPILED_BYTES_PER_FIELD = 8 * 1024;
/** Documents seen once, by a hash of their text, waiting for a second request to be worth compiling. */
const SEEN_MAX_ENTRIES = 1000;

export interface Compiled {
  query: CompiledQuery;
  fields: number;
}

/** Fields an operation selects with fragments expanded, counting stops past `limit`. */
export function expandedFieldCount(document: DocumentNode, operationName: string | null | undefined, limit: number): number {
  const operation = getOperationAST(document, operationName);
  if (!operation) return Infinity;
  const fragment = fragmentsOf(document);
  let count = 0;
  const walk = (selectionSet: SelectionSetNode) => {
    for (const field of fieldsOf(selectionSet, fragment)) {
      if (count > limit) return;
      // Introspection runs on graphql-js, where its own budget applies (introspection-budget.ts).
      if (field.name.value === '__schema' || field.name.value === '__type') count = Infinity;
      count++;
      if (field.selectionSet) walk(field.selectionSet);
    }
  };
  walk(operation.selectionSet);
  return count;
}

/** The bounded compiled documents of `/graphql`: Yoga's plugin fills them, the route's fast path reads them. */
export interface CompiledDocuments {
  /** The Yoga plugin: runs repeated documents compiled, compiling them on their second request. */
  plugin: Plugin;
  /** The compiled form of a document that already passed Yoga's validation (compiled only in `onExecute`). */
  lookup(text: string, operationName: string | null | undefined): Compiled | undefined;
}

// A hash: a text may be megabytes. The name is length-prefixed so no (name, text) pair passes for another.
const keyOf = (text: string, operationName: string | null | undefined) =>
  createHash('sha256')
    .update(`${operationName == null ? '-' : `${operationName.length}:${operationName}`}\n${text}`)
    .digest('base64');

export function createCompiledDocuments(): CompiledDocuments {
  const compiled = new LRUCache<string, Compiled>({
    max: COMPILED_CACHE_MAX_ENTRIES,
    maxSize: COMPILED_CACHE_MAX_BYTES,
    sizeCalculation: (entry) => Math.max(1, entry.fields * COMPILED_BYTES_PER_FIELD),
  });
  const seen = new LRUCache<string, true>({ max: SEEN_MAX_ENTRIES });

  const compiledFor = (args: ExecutionArgs): Compiled | null => {
    const text = args.document.loc?.source.body;
    if (text === undefined) return null;
    const key = keyOf(text, args.operationName);
    const hit = compiled.get(key);
    if (hit) return hit;
    if (!seen.has(key)) {
      seen.set(key, true);
      return null;
    }
    const operation = getOperationAST(args.document, args.operationName)?.operation;
    if (operation !== 'query' && operation !== 'mutation') return null;
    const fields = expandedFieldCount(args.document, args.operationName, MAX_COMPILED_FIELDS);
    if (fields > MAX_COMPILED_FIELDS) return null;
    const query = compileQuery(args.schema, args.document, args.operationName ?? undefined);
    if (!isCompiledQuery(query)) return null;
    const entry = { query, fields };
    compiled.set(key, entry);
    seen.delete(key);
    return entry;
  };

  return {
    plugin: {
      onExecute({ args, setExecuteFn }) {
        const entry = compiledFor(args);
        if (entry)
          setExecuteFn((executionArgs: ExecutionArgs) =>
            entry.query.query(executionArgs.rootValue, executionArgs.contextValue, executionArgs.variableValues ?? {}),
          );
      },
    },
    lookup: (text, operationName) => compiled.get(keyOf(text, operationName)),
  };
}
