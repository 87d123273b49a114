import { createHash } from 'node:crypto';
import { getOperationAST, type DocumentNode, type ExecutionArgs, type SelectionSetNode } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import { fieldsOf, fragmentsOf } from './selections.js';

/**
 * Compiled execution (graphql-jit) for the documents `/graphql` callers repeat, within bounds a
 * caller cannot push: a compiled document costs memory in proportion to the fields it selects
 * (fragments expanded, aliases counted): 2 to 4 KiB of heap per field, and about as much again in
 * V8's code space once it runs (400 compiled 210-field documents, 29 of them cached at a time,
 * grew RSS by 89 MiB), so
 *   - a document is compiled on its second request, not its first: internal tools repeat a few
 *     documents, while a stream of distinct documents never compiles anything;
 *   - only documents of at most MAX_COMPILED_FIELDS fields are compiled (the work of one compile
 *     is bounded); larger ones, introspection and subscriptions run on graphql-js's executor;
 *   - compiled documents are kept in an LRU bounded in entries and in estimated bytes.
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
  /**
   * The compiled form of a document text (and operation name) that has already passed Yoga's
   * parse, token limit and validation (compilation happens only in `onExecute`), or undefined.
   * Never compiles anything itself.
   */
  lookup(text: string, operationName: string | null | undefined): Compiled | undefined;
}

// Keyed by a hash: a document's text may be megabytes of string literals. The operation name is
// length-prefixed, so no name and text can pass for another pair, and no name ('' included, which
// selects no operation) passes for an absent one.
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
