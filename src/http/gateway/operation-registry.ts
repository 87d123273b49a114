import { parse, validate, type GraphQLSchema, type OperationTypeNode } from 'graphql';
import type { Scope } from '../../schema/principal.js';
import type { JsonSchema } from '../../schema/json-schema.js';
import { prepareOperation, type RestOperation } from '../rest/rest-route.js';
import { persistedDocuments } from './persisted-documents.js';

/** One gateway operation: a persisted document, described entirely from the schema. */
export interface GatewayOperation {
  operationId: string;
  scope: Scope;
  description: string;
  /** The document's text, as discovery shows it. */
  text: string;
  documentId: string;
  /** The parsed document, its root field and its variables' validator. */
  prepared: RestOperation;
  result: JsonSchema;
}

/**
 * Checks every persisted document against the schema; throws naming the first invalid one. The
 * documents are fixed at build time, so the build runs this (scripts/check-persisted-documents.ts)
 * and start-up does not.
 */
export function validatePersistedDocuments(schema: GraphQLSchema, entries = persistedDocuments.entries) {
  for (const [documentId, text] of entries) {
    const errors = validate(schema, parse(text));
    if (errors.length) throw new Error(`Persisted document ${documentId} is invalid: ${errors.map((e) => e.message).join('; ')}`);
  }
}

/**
 * Builds the gateway's operations from the persisted documents (validated by the build, see
 * validatePersistedDocuments): their JSON Schemas and validators are compiled once.
 */
export function buildOperationRegistry(schema: GraphQLSchema) {
  const operations = new Map<string, GatewayOperation>();
  for (const [documentId, text] of persistedDocuments.entries) {
    const document = parse(text);
    const prepared = prepareOperation(schema, document);
    if (!prepared.scope) throw new Error(`Gateway operation field ${prepared.rootField} must declare exactly one of READ, WRITE or ADMIN.`);
    const rootType = schema.getRootType(prepared.type as OperationTypeNode);
    operations.set(prepared.name, {
      operationId: prepared.name,
      scope: prepared.scope,
      description: rootType?.getFields()[prepared.rootField]?.description ?? '',
      text,
      documentId,
      prepared,
      result: prepared.result,
    });
  }
  return operations;
}

export type OperationRegistry = ReturnType<typeof buildOperationRegistry>;
