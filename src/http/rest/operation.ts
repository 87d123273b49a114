/** A REST route's operation: its document prepared at start-up, its variables checked (Ajv), its execution (graphql-jit). */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import {
  Kind,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { AppError, type ErrorDetail } from '../../common/errors.js';
import {
  atLeastCharacters,
  atMostCharacters,
  atMostItems,
  mustBeOfType,
  mustBeOneOf,
  REQUIRED,
  UNKNOWN_FIELD,
} from '../../common/detail-messages.js';
import { createContext, releaseContext, type RequestContext, type Services } from '../../schema/context.js';
import { fragmentsOf, resultJsonSchema, variablesJsonSchema, type FragmentMap, type JsonSchema } from '../../schema/json-schema.js';
import { SCOPES, type Scope } from '../../schema/principal.js';
import { readTimestamp } from '../../schema/scalars.js';
import { maskError } from '../graphql/graphql-errors.js';
import { sharedSubscribe } from '../streams/shared-subscribe.js';

export interface RestOperation {
  name: string;
  type: 'query' | 'mutation' | 'subscription';
  document: DocumentNode;
  rootField: string;
  /** The gateway scope (READ, WRITE or ADMIN) its root field declares, if any: a caller without it is 403. */
  scope?: Scope;
  variables: VariablesValidator;
  /** The JSON Schema of its root field's value, as discovery and the API reference publish it. */
  result: JsonSchema;
}

export const operationOf = (document: DocumentNode): OperationDefinitionNode => {
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (!operation) throw new Error('The document has no operation.');
  return operation;
};

/** The one gateway scope a root field declares through Pothos scope-auth (`authScopes: { READ: true }`), if it declares exactly one. */
function declaredScope(field: GraphQLField<unknown, unknown> | undefined): Scope | undefined {
  const authScopes = (field?.extensions?.pothosOptions as { authScopes?: unknown } | undefined)?.authScopes;
  const scopes = authScopes && typeof authScopes === 'object' ? SCOPES.filter((scope) => scope in authScopes) : [];
  return scopes.length === 1 ? scopes[0] : undefined;
}

export function prepareOperation(schema: GraphQLSchema, document: DocumentNode): RestOperation {
  const operation = operationOf(document);
  if (!operation.name) throw new Error('A REST operation is a named operation.');
  const fields = operation.selectionSet.selections;
  if (fields.length !== 1 || fields[0].kind !== Kind.FIELD)
    throw new Error(`Operation ${operation.name.value} must select exactly one root field.`);
  const rootField = fields[0].name.value;
  const scope = declaredScope(schema.getRootType(operation.operation)?.getFields()[rootField]);
  return {
    name: operation.name.value,
    type: operation.operation,
    document,
    rootField,
    ...(scope && { scope }),
    variables: variablesValidator(schema, operation, fragmentsOf(document)),
    result: resultJsonSchema(schema, operation, { rootField: true, fragments: fragmentsOf(document) }),
  };
}

/** The body of an operation whose variables are one input object, `$<variable>` (e.g. skip trace's `input`). */
export function inputBodySchema(operation: RestOperation, variable: string): JsonSchema {
  const { $schema, $defs, properties } = operation.variables.schema as { $schema: string; $defs?: JsonSchema; properties: JsonSchema };
  const input = properties[variable];
  if (!input) throw new Error(`Operation ${operation.name} has no variable $${variable}.`);
  return { $schema, ...($defs && { $defs }), ...(input as JsonSchema) };
}

/** The REST routes' one variables validator; `verbose` keeps each failing schema so a message can name allowed values. */
const ajv = new Ajv2020({
  strict: false,
  allErrors: true,
  verbose: true,
  formats: { 'date-time': (value: string) => readTimestamp(value) !== null },
});

export interface VariablesValidator {
  readonly schema: JsonSchema;
  /** The contract's `details` for `variables`; `leaveRulesAt`: paths whose rules the operation answers itself. */
  check(variables: unknown, leaveRulesAt?: RegExp): ErrorDetail[];
  /** Compiles the validator now (it is otherwise compiled at the first check): for tests. */
  compile(): void;
}

export function variablesValidator(schema: GraphQLSchema, operation: OperationDefinitionNode, fragments: FragmentMap): VariablesValidator {
  // The variant with the rules' own messages, compiled at first check (docs/architecture.md, step 6).
  let validate: ValidateFunction | undefined;
  const compiled = () => (validate ??= ajv.compile(variablesJsonSchema(schema, operation, { fragments, errorMessages: true })));
  return {
    schema: variablesJsonSchema(schema, operation, { fragments }),
    check: (value, leaveRulesAt) => {
      const run = compiled();
      return run(value) ? [] : errorDetails(run, leaveRulesAt);
    },
    compile: () => void compiled(),
  };
}

/** A rule in the resolvers' words: the field's own `errorMessage` when stated, else one per keyword. */
function describe(error: ErrorObject): string {
  const own = (error.parentSchema as { errorMessage?: Record<string, string> } | undefined)?.errorMessage?.[error.keyword];
  if (own) return own;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'type':
      return mustBeOfType(Array.isArray(params.type) ? (params.type as string[]) : String(params.type).split(','));
    case 'enum':
      return mustBeOneOf(params.allowedValues as unknown[]);
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'minLength':
      return atLeastCharacters(Number(params.limit));
    case 'maxLength':
      return atMostCharacters(Number(params.limit));
    case 'minimum':
      return `must be at least ${String(params.limit)}`;
    case 'maximum':
      return `must be at most ${String(params.limit)}`;
    case 'minItems':
      return `must hold at least ${String(params.limit)} items`;
    case 'maxItems':
      return atMostItems(Number(params.limit));
    case 'format':
      return params.format === 'date-time'
        ? 'must be an ISO 8601 timestamp, e.g. 2026-11-23T08:15:30.123Z'
        : `must be a ${String(params.format)}`;
    case 'pattern':
      return `must match the pattern ${String(params.pattern)}`;
    default:
      return error.message ?? 'is invalid';
  }
}

/** What JSON Schema says of a value's shape, as opposed to the rules a field's own constraints state. */
const SHAPE_KEYWORDS = new Set(['type', 'required', 'additionalProperties', 'enum', 'const', 'minItems', 'maxItems']);

/** Ajv errors as contract `details`: one entry per failing path, naming unknown fields. */
function errorDetails(validate: ValidateFunction, leaveRulesAt?: RegExp): ErrorDetail[] {
  // A nullable input's `anyOf` makes Ajv also report the null branch and the anyOf: repeats, dropped.
  const errors = (validate.errors ?? []).filter(
    (e) =>
      e.keyword !== 'anyOf' &&
      !(e.keyword === 'type' && (e.params as { type?: unknown }).type === 'null' && e.schemaPath.includes('/anyOf/')) &&
      !(leaveRulesAt && !SHAPE_KEYWORDS.has(e.keyword) && leaveRulesAt.test(e.instancePath)),
  );
  return errors.map((e) => {
    const pointer = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const base = pointer ? `variables.${pointer}` : 'variables';
    if (e.keyword === 'additionalProperties') {
      return {
        path: `${base}.${(e.params as { additionalProperty: string }).additionalProperty}`,
        message: pointer ? UNKNOWN_FIELD : 'is not a known variable',
      };
    }
    if (e.keyword === 'required')
      return { path: `${base}.${(e.params as { missingProperty: string }).missingProperty}`, message: REQUIRED };
    return { path: base, message: describe(e) };
  });
}

export type OperationResult = { data: Record<string, unknown> | null; error: AppError | null };

type OperationRunner<Result> = (
  document: DocumentNode,
  variableValues: Record<string, unknown>,
  request: RequestContext,
) => Promise<Result>;

export type OperationExecutor = OperationRunner<OperationResult>;

/**
 * REST documents are fixed and validated at start-up, so each is compiled once (graphql-jit) and
 * skips Yoga's HTTP pipeline; same context and error masking as /graphql.
 */
export function createOperationExecutor(schema: GraphQLSchema, services: Services): OperationExecutor {
  const compiled = new WeakMap<DocumentNode, CompiledQuery>();
  const compile = (document: DocumentNode): CompiledQuery => {
    let query = compiled.get(document);
    if (!query) {
      const result = compileQuery(schema, document);
      if (!isCompiledQuery(result)) throw new Error(`Cannot compile a REST operation: ${result.errors?.map((e) => e.message).join('; ')}`);
      compiled.set(document, (query = result));
    }
    return query;
  };
  return async (document, variableValues, request) => {
    const context = createContext(request, services);
    let result: Awaited<ReturnType<CompiledQuery['query']>>;
    try {
      result = await compile(document).query(undefined, context, variableValues);
    } finally {
      releaseContext(context);
    }
    const error = result.errors?.[0];
    return {
      data: (result.data as Record<string, unknown> | null | undefined) ?? null,
      error: error ? AppError.from(maskError(error, services.log)) : null,
    };
  };
}

type SubscriptionResult = { events: AsyncIterator<ExecutionResult>; error: null } | { events: null; error: AppError };

export type OperationSubscriber = OperationRunner<SubscriptionResult>;

/** Subscriptions run on graphql-js (opened once per stream); each event executes once for its readers. */
export function createOperationSubscriber(schema: GraphQLSchema, services: Services): OperationSubscriber {
  return async (document, variableValues, request) => {
    const result = await sharedSubscribe({ schema, document, contextValue: createContext(request, services), variableValues });
    if (Symbol.asyncIterator in result) return { events: result[Symbol.asyncIterator](), error: null };
    const error = result.errors?.[0];
    return { events: null, error: AppError.from(error ? maskError(error, services.log) : new Error('The subscription did not open.')) };
  };
}
