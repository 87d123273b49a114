import { Ajv, type ValidateFunction } from 'ajv';
import { Kind, parse, validate, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Scope } from '../auth/api-key.entity.js';
import type { ErrorDetail } from '../graphql/errors.js';
import { resultJsonSchema, variablesJsonSchema, type JsonSchema } from './json-schema.js';
import { persistedDocuments } from './persisted-documents.js';

/** One gateway operation: a persisted document, described entirely from the schema. */
export interface GatewayOperation {
  operationId: string;
  scope: Scope;
  type: 'query' | 'mutation';
  description: string;
  document: string;
  documentId: string;
  /** The root field whose value is the gateway's `data`. */
  rootField: string;
  parsed: DocumentNode;
  variables: JsonSchema;
  result: JsonSchema;
  validateVariables: ValidateFunction;
}

/** The scope a root field declares through Pothos scope-auth (`authScopes: { READ: true }`). */
function declaredScope(schema: GraphQLSchema, operation: OperationDefinitionNode, rootField: string): Scope {
  const root = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
  const field = root?.getFields()[rootField];
  const authScopes = (field?.extensions?.pothosOptions as { authScopes?: unknown } | undefined)?.authScopes;
  const scopes = authScopes && typeof authScopes === 'object' ? Object.keys(authScopes).filter((s) => ['READ', 'WRITE', 'ADMIN'].includes(s)) : [];
  if (scopes.length !== 1) throw new Error(`Gateway operation field ${rootField} must declare exactly one of READ, WRITE or ADMIN.`);
  return scopes[0] as Scope;
}

/**
 * Builds the gateway's operations from the persisted documents at start-up: each is validated
 * against the schema once, and its JSON Schemas and validators are compiled once.
 */
export function buildOperationRegistry(schema: GraphQLSchema) {
  const ajv = new Ajv({ strict: false, allErrors: true, formats: { 'date-time': true } });
  const operations = new Map<string, GatewayOperation>();

  for (const [documentId, document] of persistedDocuments.entries) {
    const parsed = parse(document);
    const errors = validate(schema, parsed);
    if (errors.length) throw new Error(`Persisted document ${documentId} is invalid: ${errors.map((e) => e.message).join('; ')}`);
    const operation = parsed.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    if (!operation?.name || operation.operation === 'subscription') throw new Error(`Persisted document ${documentId} needs one named query or mutation.`);
    const fields = operation.selectionSet.selections;
    if (fields.length !== 1 || fields[0].kind !== Kind.FIELD) throw new Error(`Operation ${operation.name.value} must select exactly one root field.`);
    const rootField = fields[0].name.value;
    const rootType = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
    const variables = variablesJsonSchema(schema, operation);
    operations.set(operation.name.value, {
      operationId: operation.name.value,
      scope: declaredScope(schema, operation, rootField),
      type: operation.operation,
      description: rootType?.getFields()[rootField]?.description ?? '',
      document,
      documentId,
      rootField,
      parsed,
      variables,
      result: resultJsonSchema(schema, operation, { rootField: true }),
      validateVariables: ajv.compile(variables),
    });
  }
  return operations;
}

export type OperationRegistry = ReturnType<typeof buildOperationRegistry>;

/** Ajv errors as contract `details`: one entry per failing path, naming unknown fields. */
export function variableErrorDetails(validateFn: ValidateFunction, unknownMessage = 'is not a known variable'): ErrorDetail[] {
  // A nullable input object is `anyOf: [{$ref}, {type: 'null'}]`; with allErrors Ajv also reports
  // the null branch and the anyOf itself, which only repeat the real error.
  const errors = (validateFn.errors ?? []).filter(
    (e) => e.keyword !== 'anyOf' && !(e.keyword === 'type' && (e.params as { type?: unknown }).type === 'null' && e.schemaPath.includes('/anyOf/')),
  );
  return errors.map((e) => {
    const pointer = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const base = pointer ? `variables.${pointer}` : 'variables';
    if (e.keyword === 'additionalProperties') {
      const name = (e.params as { additionalProperty: string }).additionalProperty;
      return { path: `${base}.${name}`, message: unknownMessage };
    }
    if (e.keyword === 'required') return { path: `${base}.${(e.params as { missingProperty: string }).missingProperty}`, message: 'is required' };
    return { path: base, message: e.message ?? 'is invalid' };
  });
}
