import { GraphQLError, type ASTVisitor, type ValidationContext, type ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens';
import type { GraphqlErrorCode } from '../../common/errors.js';
import { containsNul, NUL_MESSAGE } from '../../common/nul.js';
import { fieldsOf } from './selections.js';

/**
 * Limits on what one `/graphql` request may ask for. Each refusal is a `BAD_USER_INPUT` error with
 * a message naming the limit, before anything runs.
 *
 * Measured on the documents this service must keep serving (graphql-armor's own counting):
 *
 * | document                                   | depth | aliases | cost  | tokens |
 * |--------------------------------------------|-------|---------|-------|--------|
 * | gateway `listNotifications` (largest)      | 3     | 0       | 43.25 | 72     |
 * | REST skip trace mutation                   | 4     | 0       | 30.5  | 35     |
 * | GraphiQL's introspection query (`__schema`) | 0 *   | 0       | 0 *   | 184    |
 * | a `__type` walk, 4 `ofType` levels deep    | 7     | 0       | 177   | 53     |
 *
 * (*) depth and cost skip the `__schema` field (`ignoreIntrospection`): introspection is for
 * authenticated callers only (the route answers 401 first) and the schema is fixed.
 *
 * The REST routes (`/api/v1/call`, `/api/v1/skiptrace`) execute their fixed, pre-validated
 * documents through `executeOperation`, which skips parse and validate: none of these limits
 * applies to them, and none needs to.
 */

/**
 * Deepest selection nesting. The schema has no cycles: its deepest path is 4
 * (`skipTrace { persons { phones { number } } }`), so 8 never limits a real query; it bounds
 * `__type { ofType { ofType … } }` walks and fragment nesting.
 */
export const MAX_DEPTH = 8;

/**
 * Aliased fields per operation. An alias is the only way to run the same root resolver (one or
 * more SQL queries) several times in one request; 15 caps that fan-out. `__typename` is free.
 */
export const MAX_ALIASES = 15;

/**
 * graphql-armor's cost (objects 2, scalars 1, ×1.5 per level). 1000 is about 23 times the most
 * expensive persisted document (listNotifications, 43.25), so 15 aliased full feed pages (~650)
 * still pass, while repeated selections (`total total total …`) and wide `__type` walks do not.
 */
export const MAX_COST = 1000;

/**
 * Lexical tokens per document, checked while parsing so an oversized document costs no more than
 * this to refuse. The 4 MiB body limit alone would allow ~1M tokens; 2000 is ~10 times GraphiQL's
 * introspection query and ~28 times the largest persisted document. Bulk inputs
 * (`publishNotifications`, `importPropertyRecords`, up to 1000 items) belong in `variables`,
 * which are JSON, not tokens.
 */
export const MAX_TOKENS = 2000;

/**
 * Batching (a JSON array of operations in one request) stays off: no internal tool needs it, it
 * would multiply every per-operation limit above by the batch size, and Yoga's batch results
 * bypass the single-result `onResultProcess` hook that maps error codes to the contract's. An
 * array body is refused with BAD_USER_INPUT (see `refuseBody`).
 */
export const BATCHING_ENABLED = false;

const refusal = (message: string, code: GraphqlErrorCode = 'BAD_USER_INPUT') =>
  new GraphQLError(message, { extensions: { code, http: { spec: true, status: 400 } } });

/** graphql-armor phrases refusals as `Syntax Error: … found N.`; we keep only the number found. */
const found = (error: GraphQLError | undefined) => /found (\d+(?:\.\d+)?)/.exec(error?.message ?? '')?.[1];

/** An armor rule that reports our message through the validation context instead of throwing. */
function reporting(
  name: string,
  make: (options: {
    propagateOnRejection: false;
    onReject: Array<(context: ValidationContext | null, error: GraphQLError) => void>;
  }) => ValidationRule,
  message: (found: string | undefined) => string,
): ValidationRule {
  const rule = make({
    propagateOnRejection: false,
    onReject: [(context, error) => context?.reportError(refusal(message(found(error))))],
  });
  // Yoga's validation cache keys on rule names.
  return Object.defineProperty((context: ValidationContext) => rule(context), 'name', { value: name });
}

export const depthLimitRule = reporting(
  'DepthLimit',
  (o) => maxDepthRule({ ...o, n: MAX_DEPTH, ignoreIntrospection: true, flattenFragments: true, exposeLimits: true }),
  (n) => `The operation is nested too deeply${n ? ` (depth ${n})` : ''}; the limit is ${MAX_DEPTH} levels.`,
);

export const aliasLimitRule = reporting(
  'AliasLimit',
  (o) => maxAliasesRule({ ...o, n: MAX_ALIASES, exposeLimits: true }),
  (n) => `The operation uses too many aliases${n ? ` (${n})` : ''}; the limit is ${MAX_ALIASES}.`,
);

export const costLimitRuleWithMessage = reporting(
  'CostLimit',
  (o) => costLimitRule({ ...o, maxCost: MAX_COST, ignoreIntrospection: true, flattenFragments: true, exposeLimits: true }),
  (n) =>
    `The operation is too expensive${n ? ` (cost ${Math.ceil(Number(n))})` : ''}; the limit is ${MAX_COST}. Select fewer fields or split it into several requests.`,
);

/**
 * PostgreSQL text cannot hold U+0000. The REST body parser refuses it in JSON; a GraphQL string
 * literal can still carry it as the escape `\u0000`, which would otherwise fail the query as INTERNAL.
 */
export function noNulInStringsRule(context: ValidationContext): ASTVisitor {
  return {
    StringValue(node) {
      if (node.value.includes('\u0000'))
        context.reportError(new GraphQLError(NUL_MESSAGE, { nodes: node, extensions: { code: 'BAD_USER_INPUT' } }));
    },
  };
}

/**
 * A trace is charged when it completes, so it must be the only thing its response can lose: a
 * mutation that selects `skipTrace` more than once, or beside another field, would let a later
 * field's failure null out (non-null propagation) traces already charged. Such a document is
 * refused before anything runs. `__typename` cannot fail and is allowed beside it.
 */
export const SKIP_TRACE_ALONE_MESSAGE = 'skipTrace must be the only field of its mutation: send one trace per request.';
export function skipTraceAloneRule(context: ValidationContext): ASTVisitor {
  return {
    OperationDefinition(operation) {
      if (operation.operation !== 'mutation') return;
      const fields = [...fieldsOf(operation.selectionSet, (name) => context.getFragment(name) ?? undefined)].filter(
        (field) => field.name.value !== '__typename',
      );
      const traces = fields.filter((field) => field.name.value === 'skipTrace');
      if (traces.length > 0 && fields.length > 1)
        context.reportError(new GraphQLError(SKIP_TRACE_ALONE_MESSAGE, { nodes: traces, extensions: { code: 'BAD_USER_INPUT' } }));
    },
  };
}

/** The limits as one Yoga plugin list, to be placed before the persisted-operations plugin. */
export function useGraphqlLimits(): Plugin[] {
  return [
    maxTokensPlugin({
      n: MAX_TOKENS,
      propagateOnRejection: false,
      onReject: [
        () => {
          throw refusal(`The document has more than ${MAX_TOKENS} tokens; put large inputs in variables or split the request.`);
        },
      ],
    }) as Plugin,
    {
      onValidate({ addValidationRule }) {
        addValidationRule(depthLimitRule);
        addValidationRule(aliasLimitRule);
        addValidationRule(costLimitRuleWithMessage);
        addValidationRule(noNulInStringsRule);
        addValidationRule(skipTraceAloneRule);
      },
      // GET requests carry variables in the query string, past the JSON body parser's U+0000 check.
      onParams({ params, setResult }) {
        if (containsNul(params.variables)) setResult({ errors: [refusal(NUL_MESSAGE)] });
      },
    },
  ];
}
