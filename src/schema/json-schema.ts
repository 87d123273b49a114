/**
 * JSON Schemas (draft 2020-12) of an operation's variables and result, derived from the GraphQLSchema
 * so discovery, OpenAPI and gateway validation cannot drift from the API.
 */
import {
  GraphQLNonNull,
  Kind,
  TypeInfo,
  astFromValue,
  getNamedType,
  getNullableType,
  isAbstractType,
  isCompositeType,
  isEnumType,
  isInputObjectType,
  isInputType,
  isListType,
  isNonNullType,
  typeFromAST,
  valueFromASTUntyped,
  visit,
  visitWithTypeInfo,
} from 'graphql';
import type {
  ASTNode,
  DocumentNode,
  FieldNode,
  FragmentDefinitionNode,
  GraphQLArgument,
  GraphQLCompositeType,
  GraphQLInputField,
  GraphQLInputObjectType,
  GraphQLNamedType,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLType,
  NamedTypeNode,
  OperationDefinitionNode,
  SelectionNode,
  SelectionSetNode,
} from 'graphql';
import { NUL_DETAIL } from '../common/nul.js';

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
/** The service refuses U+0000 in every string it is sent (common/nul.ts): PostgreSQL text cannot hold it. */
export const NUL_FREE_PATTERN = '^[^\\u0000]*$';

export type JsonSchema = Record<string, unknown>;
export type FragmentMap = Readonly<Record<string, FragmentDefinitionNode>>;
export interface OperationSchemaOptions {
  fragments?: FragmentMap;
}

export interface VariablesSchemaOptions extends OperationSchemaOptions {
  /** Emit each constraint's message as `errorMessage` for the REST validator; never in a published schema. */
  errorMessages?: boolean;
}

export function fragmentsOf(document: DocumentNode): FragmentMap {
  const map: Record<string, FragmentDefinitionNode> = {};
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) map[d.name.value] = d;
  return map;
}

type InputDef = GraphQLArgument | GraphQLInputField;

const SCALARS: Record<string, JsonSchema> = {
  String: { type: 'string' },
  ID: { type: 'string' },
  Int: { type: 'integer', minimum: -2147483648, maximum: 2147483647 }, // GraphQL Int is 32-bit signed
  Float: { type: 'number' },
  Boolean: { type: 'boolean' },
  DateTime: { type: 'string', format: 'date-time' },
};

/** An input leaf: output leaves plus the rules every input string meets. */
function inputLeafSchema(type: GraphQLNamedType, errorMessages: boolean): JsonSchema {
  const s = leafSchema(type);
  if (s.type !== 'string' || s.enum || s.format) return s;
  return { ...s, pattern: NUL_FREE_PATTERN, ...(errorMessages && { errorMessage: { pattern: NUL_DETAIL } }) };
}

function leafSchema(type: GraphQLNamedType): JsonSchema {
  if (isEnumType(type)) return { type: 'string', enum: type.getValues().map((v) => v.name) };
  // Other custom scalars accept anything: their parseValue is the real check. Copy so callers may mutate.
  return Object.hasOwn(SCALARS, type.name) ? { ...SCALARS[type.name] } : {};
}

/** Allows null while keeping every sibling keyword meaningful to Ajv. */
function orNull(s: JsonSchema): JsonSchema {
  if (Object.keys(s).length === 0) return s; // `{}` already admits null
  if (typeof s.type === 'string') {
    const out: JsonSchema = { ...s, type: [s.type, 'null'] };
    // `enum` is checked independently of `type`, so null must be listed too.
    if (Array.isArray(s.enum)) out.enum = [...s.enum, null];
    return out;
  }
  return { anyOf: [s, { type: 'null' }] }; // e.g. `$ref`
}

function wrapped(type: GraphQLType, named: (t: GraphQLNamedType) => JsonSchema): JsonSchema {
  const inner = getNullableType(type);
  const s = isListType(inner) ? { type: 'array', items: wrapped(inner.ofType, named) } : named(inner);
  return isNonNullType(type) ? s : orNull(s);
}

// Bounds from several sources (Int range, several usages) combine to the tightest one.
const TIGHTEST: Record<string, (a: number, b: number) => number> = {
  minimum: Math.max,
  exclusiveMinimum: Math.max,
  minLength: Math.max,
  minItems: Math.max,
  minProperties: Math.max,
  maximum: Math.min,
  exclusiveMaximum: Math.min,
  maxLength: Math.min,
  maxItems: Math.min,
  maxProperties: Math.min,
};

const isObject = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Sets or clears the message of a keyword on `target`: a message never outlives the bound it words. */
function wordKeyword(target: JsonSchema, k: string, message: unknown): void {
  const { [k]: _replaced, ...others } = (target.errorMessage as Record<string, string> | undefined) ?? {};
  const words = typeof message === 'string' ? { ...others, [k]: message } : others;
  if (Object.keys(words).length) target.errorMessage = words;
  else delete target.errorMessage;
}

/** Adds keywords to a schema without weakening what is already there. */
function withKeywords(s: JsonSchema, extra: JsonSchema, messages?: JsonSchema): JsonSchema {
  const entries = Object.entries(extra).filter(([, v]) => v !== undefined);
  if (!entries.length) return s;
  // Draft-07 validators ignored siblings of `$ref`; under `allOf` the schema reads the same in any dialect.
  const out: JsonSchema = typeof s.$ref === 'string' ? { allOf: [{ $ref: s.$ref }] } : { ...s };
  for (const [k, v] of entries) {
    const cur = out[k];
    if (cur === undefined || k === 'description' || k === 'default') {
      out[k] = v;
      if (messages) wordKeyword(out, k, messages[k]);
    } else if (k in TIGHTEST && typeof cur === 'number' && typeof v === 'number') {
      out[k] = TIGHTEST[k](cur, v);
      if (messages && out[k] !== cur) wordKeyword(out, k, messages[k]);
    } else if (JSON.stringify(cur) !== JSON.stringify(v)) {
      const added: JsonSchema = { [k]: v };
      if (messages) wordKeyword(added, k, messages[k]);
      out.allOf = [...((out.allOf as unknown[]) ?? []), added];
    }
  }
  return out;
}

/** Merges `extensions.constraints` of an argument or input field; `items` targets list items. */
function withConstraints(s: JsonSchema, def: InputDef, errorMessages: boolean): JsonSchema {
  const constraints = def.extensions?.constraints;
  if (!isObject(constraints)) return s;
  const messages = errorMessages && isObject(def.extensions?.constraintMessages) ? def.extensions.constraintMessages : undefined;
  const { items, ...rest } = constraints;
  const out = withKeywords(s, rest, messages);
  const itemMessages = isObject(messages?.items) ? messages.items : undefined;
  if (isObject(items) && isObject(out.items)) out.items = withKeywords(out.items, items, itemMessages);
  return out;
}

/** Default value as a client would send it (enum names, not internal values). */
function externalDefault(def: InputDef): unknown {
  if (def.defaultValue === undefined) return undefined;
  const ast = astFromValue(def.defaultValue, def.type);
  return ast ? valueFromASTUntyped(ast) : undefined;
}

function fragment(fragments: FragmentMap | undefined, name: string): FragmentDefinitionNode {
  const definition = fragments?.[name];
  if (!definition) throw new Error(`Fragment "${name}" is not defined; pass { fragments: fragmentsOf(document) }.`);
  return definition;
}

/** The definitions of the input object types a variables schema uses, and whether they carry messages. */
interface InputDefinitions {
  defs: Record<string, JsonSchema>;
  errorMessages: boolean;
}

function inputNamed(type: GraphQLNamedType, inputs: InputDefinitions): JsonSchema {
  if (!isInputObjectType(type)) return inputLeafSchema(type, inputs.errorMessages);
  if (!inputs.defs[type.name]) defineInput(type, inputs);
  return { $ref: `#/$defs/${type.name}` };
}

function defineInput(type: GraphQLInputObjectType, inputs: InputDefinitions): void {
  const { defs } = inputs;
  const def: JsonSchema = { type: 'object', additionalProperties: false };
  defs[type.name] = def; // registered before recursing so self-referencing inputs terminate
  if (type.description) def.description = type.description;
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const field of Object.values(type.getFields())) {
    // @oneOf: exactly one field, and it must not be null.
    const fieldType = type.isOneOf && !isNonNullType(field.type) ? new GraphQLNonNull(field.type) : field.type;
    const s = withConstraints(
      wrapped(fieldType, (t) => inputNamed(t, inputs)),
      field,
      inputs.errorMessages,
    );
    properties[field.name] = withKeywords(s, { description: field.description ?? undefined, default: externalDefault(field) });
    if (isNonNullType(field.type) && field.defaultValue === undefined) required.push(field.name);
  }
  def.properties = properties;
  if (required.length) def.required = required;
  if (type.isOneOf) Object.assign(def, { minProperties: 1, maxProperties: 1 });
}

/** For each variable, the arguments/input fields it is passed to directly (not nested in a literal). */
function variableUsages(schema: GraphQLSchema, operation: OperationDefinitionNode, fragments?: FragmentMap) {
  const usages = new Map<string, InputDef[]>();
  const typeInfo = new TypeInfo(schema);
  const seen = new Set<string>();
  const pending: ASTNode[] = [operation];
  for (let root = pending.pop(); root; root = pending.pop()) {
    visit(
      root,
      visitWithTypeInfo(typeInfo, {
        FragmentSpread(node) {
          if (!seen.has(node.name.value)) pending.push(fragment(fragments, node.name.value));
          seen.add(node.name.value);
        },
        Variable(node, _key, parent) {
          if (!parent || Array.isArray(parent)) return; // list items / variable definitions: no arg of their own
          let def: InputDef | undefined | null;
          const p = parent as ASTNode;
          if (p.kind === Kind.ARGUMENT) def = typeInfo.getArgument();
          else if (p.kind === Kind.OBJECT_FIELD) {
            const owner = getNamedType(typeInfo.getParentInputType());
            def = isInputObjectType(owner) ? owner.getFields()[p.name.value] : undefined;
          }
          if (def) usages.set(node.name.value, [...(usages.get(node.name.value) ?? []), def]);
        },
      }),
    );
  }
  return usages;
}

export function variablesJsonSchema(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  opts: VariablesSchemaOptions = {},
): JsonSchema {
  const usages = variableUsages(schema, operation, opts.fragments);
  const errorMessages = opts.errorMessages ?? false;
  const definitions: Record<string, JsonSchema> = {};
  const inputs: InputDefinitions = { defs: definitions, errorMessages };
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const v of operation.variableDefinitions ?? []) {
    const name = v.variable.name.value;
    const type = typeFromAST(schema, v.type);
    if (!type || !isInputType(type)) throw new Error(`Variable "$${name}" has an unknown or non-input type.`);
    const uses = usages.get(name) ?? [];
    const isRequired = isNonNullType(type) && !v.defaultValue;
    let s = uses.reduce(
      (acc, use) => withConstraints(acc, use, errorMessages),
      wrapped(type, (t) => inputNamed(t, inputs)),
    );
    // The argument default only matters when the variable may be omitted.
    const fallback = isRequired ? undefined : uses.map(externalDefault).find((d) => d !== undefined);
    s = withKeywords(s, {
      description: uses.find((u) => u.description)?.description ?? undefined,
      default: v.defaultValue ? valueFromASTUntyped(v.defaultValue) : fallback,
    });
    properties[name] = s;
    if (isRequired) required.push(name);
  }
  const out: JsonSchema = { $schema: JSON_SCHEMA_DIALECT, type: 'object', additionalProperties: false, properties };
  if (required.length) out.required = required;
  if (Object.keys(definitions).length) out.$defs = definitions;
  return out;
}

// `optional`: only selected under @skip/@include, so the key may be absent.
type Collected = { nodes: FieldNode[]; optional: boolean };

const isConditional = (sel: SelectionNode) => !!sel.directives?.some((d) => d.name.value === 'skip' || d.name.value === 'include');

function fragmentApplies(schema: GraphQLSchema, cond: NamedTypeNode | undefined, type: GraphQLObjectType) {
  if (!cond) return true;
  const conditionType = typeFromAST(schema, cond);
  return conditionType === type || (isAbstractType(conditionType) && schema.isSubType(conditionType, type));
}

/** Same merging as graphql's CollectFields, for one concrete runtime type. */
function collectFields(
  schema: GraphQLSchema,
  type: GraphQLObjectType,
  set: SelectionSetNode,
  fragments: FragmentMap | undefined,
  out: Map<string, Collected>,
  optional: boolean,
): void {
  for (const sel of set.selections) {
    const opt = optional || isConditional(sel);
    if (sel.kind === Kind.FIELD) {
      const key = sel.alias?.value ?? sel.name.value;
      const entry = out.get(key);
      if (entry) {
        entry.nodes.push(sel);
        entry.optional &&= opt;
      } else out.set(key, { nodes: [sel], optional: opt });
    } else {
      const frag = sel.kind === Kind.INLINE_FRAGMENT ? sel : fragment(fragments, sel.name.value);
      if (fragmentApplies(schema, frag.typeCondition, type)) collectFields(schema, type, frag.selectionSet, fragments, out, opt);
    }
  }
}

function objectSchema(schema: GraphQLSchema, type: GraphQLObjectType, sets: SelectionSetNode[], fragments?: FragmentMap): JsonSchema {
  const fields = new Map<string, Collected>();
  for (const set of sets) collectFields(schema, type, set, fragments, fields, false);
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [key, { nodes, optional }] of fields) {
    const name = nodes[0].name.value;
    if (!optional) required.push(key);
    if (name === '__typename') {
      properties[key] = { type: 'string', const: type.name };
      continue;
    }
    const def = type.getFields()[name];
    if (!def) throw new Error(`Field "${name}" does not exist on type "${type.name}".`);
    const subSets = nodes.flatMap((n) => (n.selectionSet ? [n.selectionSet] : []));
    const s = wrapped(def.type, (t) => (isCompositeType(t) ? compositeSchema(schema, t, subSets, fragments) : leafSchema(t)));
    properties[key] = def.description ? withKeywords(s, { description: def.description }) : s;
  }
  const out: JsonSchema = { type: 'object', additionalProperties: false, properties };
  if (required.length) out.required = required;
  return out;
}

/** Interfaces/unions: one branch per possible runtime type, each with exactly its fields. */
function compositeSchema(schema: GraphQLSchema, type: GraphQLCompositeType, sets: SelectionSetNode[], fragments?: FragmentMap): JsonSchema {
  if (!isAbstractType(type)) return objectSchema(schema, type, sets, fragments);
  const branches = schema.getPossibleTypes(type).map((t) => objectSchema(schema, t, sets, fragments));
  return branches.length === 1 ? branches[0] : branches.length ? { anyOf: branches } : { not: {} };
}

/** Schema of `data`, or with `rootField: true` of the one root field's value. */
export function resultJsonSchema(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  opts: OperationSchemaOptions & { rootField?: boolean } = {},
): JsonSchema {
  const root = schema.getRootType(operation.operation);
  if (!root) throw new Error(`Schema has no ${operation.operation} root type.`);
  const data = objectSchema(schema, root, [operation.selectionSet], opts.fragments);
  const props = data.properties as Record<string, JsonSchema>;
  const keys = Object.keys(props);
  return { $schema: JSON_SCHEMA_DIALECT, ...(opts.rootField && keys.length === 1 ? props[keys[0]] : data) };
}

/** An object schema without some of its properties (e.g. fields a route answers as headers rather than in its body). */
export function withoutProperties(schema: JsonSchema, names: readonly string[]): JsonSchema {
  const properties = { ...(schema.properties as Record<string, JsonSchema>) };
  for (const name of names) delete properties[name];
  const required = Array.isArray(schema.required) ? (schema.required as string[]).filter((name) => !names.includes(name)) : undefined;
  return { ...schema, properties, ...(required && { required }) };
}
