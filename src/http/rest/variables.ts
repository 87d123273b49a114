import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { GraphQLSchema, OperationDefinitionNode } from 'graphql';
import type { ErrorDetail } from '../../common/errors.js';
import {
  atLeastCharacters,
  atMostCharacters,
  atMostItems,
  mustBeOfType,
  mustBeOneOf,
  REQUIRED,
  UNKNOWN_FIELD,
} from '../../common/detail-messages.js';
import { variablesJsonSchema, type FragmentMap, type JsonSchema } from '../../schema/json-schema.js';
import { readTimestamp } from '../../schema/scalars.js';

/**
 * The one JSON Schema validator of the REST routes: every route's body is checked against the
 * variables schema of its operation, derived from the GraphQL schema (json-schema.ts). `verbose`
 * keeps each failing schema beside its error, so a message can name the allowed values.
 */
const ajv = new Ajv2020({
  strict: false,
  allErrors: true,
  verbose: true,
  formats: { 'date-time': (value: string) => readTimestamp(value) !== null },
});

export interface VariablesValidator {
  /** The variables' JSON Schema as discovery publishes it: standard keywords only. */
  readonly schema: JsonSchema;
  /**
   * The contract's `details` for `variables`, empty when they are valid. `leaveRulesAt`: paths
   * whose rules (a length, a pattern: any keyword but a JSON type's, a required or unknown field's,
   * an enumeration's) the operation answers itself, e.g. an item of a list that fails alone.
   */
  check(variables: unknown, leaveRulesAt?: RegExp): ErrorDetail[];
  /** Compiles the validator now (it is otherwise compiled at the first check): for tests. */
  compile(): void;
}

export function variablesValidator(schema: GraphQLSchema, operation: OperationDefinitionNode, fragments: FragmentMap): VariablesValidator {
  // Checked against the variant that carries the rules' own messages (`errorMessage`), which is
  // this validator's business only: discovery publishes the standard schema. Compiled at the
  // first check, not at start-up: Ajv's compilation (its meta-schema's above all) was most of the
  // start-up's CPU; test/gateway/variables-compile.test.ts compiles every operation's validator.
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

/**
 * A rule in words, the same words the resolvers use for the same rule: the field's own message
 * when its schema states one (`errorMessage`, e.g. the ZIP rule), else one per keyword.
 */
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
  // A nullable input object is `anyOf: [{$ref}, {type: 'null'}]`; with allErrors Ajv also reports
  // the null branch and the anyOf itself, which only repeat the real error.
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
