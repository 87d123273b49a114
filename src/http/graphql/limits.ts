import { GraphQLError, type ASTVisitor, type ValidationContext, type ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens';
import type { GraphqlErrorCode } from '../../common/errors.js';
import { containsNul, NUL_MESSAGE } from '../../common/nul.js';
import { fieldsOf } from './selections.js';

/** Limits on one `/graphql` document, refused as `BAD_USER_INPUT` before anything runs (sizing: docs/scaling.md). */

/** Deepest nesting: twice the schema's deepest path (4); it bounds `__type { ofType … }` walks. */
export const MAX_DEPTH = 8;

/** Aliased fields per operation: aliases are how one request runs a resolver (and its SQL) many times. */
export const MAX_ALIASES = 15;

/** graphql-armor's cost: 15 aliased full feed pages pass; repeated selections and wide `__type` walks do not. */
export const MAX_COST = 1000;

/** Tokens per document, counted while parsing so a huge document is cheap to refuse; bulk inputs go in `variables`. */
export const MAX_TOKENS = 2000;

/** Batching stays off: it multiplies every limit and bypasses the contract's error codes. */
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

/** PostgreSQL text cannot hold U+0000: a string literal's `\u0000` is refused here rather than failing as INTERNAL. */
export function noNulInStringsRule(context: ValidationContext): ASTVisitor {
  return {
    StringValue(node) {
      if (node.value.includes('\u0000'))
        context.reportError(new GraphQLError(NUL_MESSAGE, { nodes: node, extensions: { code: 'BAD_USER_INPUT' } }));
    },
  };
}

/** A charged trace must be alone in its response, so another field's failure cannot null out a charged trace. */
export const SKIP_TRACE_ALONE_MESSAGE = 'skipTrace must be the only field of its mutation: send one trace per request.';
/** The same for a batch, whose items are charged alike. */
export const SKIP_TRACE_BATCH_ALONE_MESSAGE = 'skipTraceBatch must be the only field of its mutation: send one batch per request.';
const CHARGED_FIELDS: Record<string, string> = { skipTrace: SKIP_TRACE_ALONE_MESSAGE, skipTraceBatch: SKIP_TRACE_BATCH_ALONE_MESSAGE };
export function skipTraceAloneRule(context: ValidationContext): ASTVisitor {
  return {
    OperationDefinition(operation) {
      if (operation.operation !== 'mutation') return;
      const fields = [...fieldsOf(operation.selectionSet, (name) => context.getFragment(name) ?? undefined)].filter(
        (field) => field.name.value !== '__typename',
      );
      if (fields.length < 2) return;
      for (const [name, message] of Object.entries(CHARGED_FIELDS)) {
        const charged = fields.filter((field) => field.name.value === name);
        if (charged.length > 0) context.reportError(new GraphQLError(message, { nodes: charged, extensions: { code: 'BAD_USER_INPUT' } }));
      }
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
