import { AppError, type ErrorDetail } from '../../common/errors.js';
import type { JsonSchema } from '../../schema/json-schema.js';

const INTEGER = /^-?\d{1,16}$/;

/** The JSON types a parameter's schema allows (`type: 'integer'` or `['integer', 'null']`). */
const typesOf = (schema: unknown): string[] => {
  const type = (schema as { type?: unknown } | undefined)?.type;
  return Array.isArray(type) ? (type as string[]) : typeof type === 'string' ? [type] : [];
};

/**
 * A GET route's query parameters as its operation's variables: each known parameter given once,
 * read as an integer or boolean where `schema` types it so (other values stay strings, for the
 * variables check to word). Unknown and repeated parameters are 422, naming them.
 */
export function queryVariables(schema: JsonSchema, query: unknown): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const details: ErrorDetail[] = [];
  const variables: Record<string, unknown> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (!Object.hasOwn(properties, name)) details.push({ path: name, message: 'is not a known query parameter' });
    else if (typeof value !== 'string') details.push({ path: name, message: 'must be given once' });
    else {
      const types = typesOf(properties[name]);
      variables[name] =
        types.includes('integer') && INTEGER.test(value)
          ? Number(value)
          : types.includes('boolean') && (value === 'true' || value === 'false')
            ? value === 'true'
            : value;
    }
  }
  if (details.length) throw new AppError('invalid_request', 'The query parameters are invalid.', details);
  return variables;
}
