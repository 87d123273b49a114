import {
  getArgumentValues,
  getNamedType,
  getOperationAST,
  type GraphQLError,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  type DocumentNode,
  type FieldNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { fieldsOf, fragmentsOf, type FragmentLookup } from './selections.js';

/** Values one operation's introspection may return: depth and cost limits cannot see how its lists multiply (docs/scaling.md). */
export const MAX_INTROSPECTION_VALUES = 10_000;

interface Walk {
  schema: GraphQLSchema;
  fragment: FragmentLookup;
  variables: Record<string, unknown>;
  count: number;
}

/** The counted size of an operation's introspection, stopping once past `budget`. */
export function introspectionSize(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown>,
  budget: number,
): number {
  const operation = getOperationAST(document, operationName);
  if (!operation) return 0;
  const walk: Walk = { schema, fragment: fragmentsOf(document), variables, count: 0 };
  for (const field of introspectionRootFields(operation.selectionSet, walk.fragment)) {
    const meta = field.name.value === '__schema' ? SchemaMetaFieldDef : TypeMetaFieldDef;
    countField(walk, meta as GraphQLField<unknown, unknown>, field, undefined, budget);
    if (walk.count > budget) break;
  }
  return walk.count;
}

/** The operation's root `__schema` and `__type` fields, through fragments at the root. */
function* introspectionRootFields(selectionSet: SelectionSetNode, fragment: FragmentLookup): Generator<FieldNode> {
  for (const field of fieldsOf(selectionSet, fragment)) if (field.name.value === '__schema' || field.name.value === '__type') yield field;
}

/** One field resolved as graphql-js would, its value counted; shared response keys count each time (an over-estimate). */
function countField(walk: Walk, field: GraphQLField<unknown, unknown>, node: FieldNode, source: unknown, budget: number) {
  walk.count++;
  const args = getArgumentValues(field, node, walk.variables);
  const value = field.resolve
    ? field.resolve(source, args, undefined, { schema: walk.schema } as GraphQLResolveInfo)
    : (source as Record<string, unknown>)[field.name];
  if (value === null || value === undefined || !node.selectionSet) return;
  const type = getNamedType(field.type) as GraphQLObjectType;
  for (const item of Array.isArray(value) ? value : [value]) {
    if (Array.isArray(value)) walk.count++;
    countSelections(walk, node.selectionSet, type, item, budget);
    if (walk.count > budget) return;
  }
}

function countSelections(walk: Walk, selectionSet: SelectionSetNode, type: GraphQLObjectType, source: unknown, budget: number) {
  for (const selection of fieldsOf(selectionSet, walk.fragment)) {
    if (walk.count > budget) return;
    const field = type.getFields()[selection.name.value];
    if (field) countField(walk, field, selection, source, budget);
    else walk.count++; // __typename
  }
}

/** Documents with an operation that introspects: most never do, and skip the walk. */
const introspects = new WeakMap<DocumentNode, boolean>();

function hasIntrospection(document: DocumentNode): boolean {
  let known = introspects.get(document);
  if (known === undefined) {
    const fragment = fragmentsOf(document);
    known = document.definitions.some(
      (definition) =>
        definition.kind === Kind.OPERATION_DEFINITION && !introspectionRootFields(definition.selectionSet, fragment).next().done,
    );
    introspects.set(document, known);
  }
  return known;
}

/** Refuses, before execution, an operation whose introspection would return more than the budget. */
export function useIntrospectionBudget(refusal: (message: string) => GraphQLError, budget = MAX_INTROSPECTION_VALUES): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      if (!hasIntrospection(args.document)) return;
      let size: number;
      try {
        size = introspectionSize(
          args.schema,
          args.document,
          args.operationName,
          (args.variableValues ?? {}) as Record<string, unknown>,
          budget,
        );
      } catch {
        return; // arguments that do not coerce: execution reports them
      }
      if (size > budget) {
        setResultAndStopExecution({
          errors: [
            refusal(
              `The introspection asks for more than ${budget} values; request the schema once (GET /schema.graphql or one __schema query) rather than repeating it.`,
            ),
          ],
        });
      }
    },
  };
}
