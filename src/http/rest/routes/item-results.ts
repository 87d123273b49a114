/**
 * An item's result on the REST routes (a batch's results, a job's results pages): the fields of
 * `SkipTraceItemResult` as the routes' documents select them, and the body without an empty
 * `details` (which the API reference words as optional, as for any error).
 */
import type { JsonSchema } from '../../../schema/json-schema.js';

/** The selection of a `SkipTraceItemResult`, in a route's document. */
export const ITEM_RESULT_FIELDS = `index key status id
  persons { firstName lastName middleName age phones { number type } emails }
  error { code message details { path message } }`;

/** An item's result as the document selects it. */
export interface ItemResultValue {
  error: { code: string; message: string; details: unknown[] | null } | null;
}

/** The result as the body answers it: an error's `details` only when it has some. */
export function restItemResult<T extends ItemResultValue>(item: T): T {
  if (!item.error || item.error.details !== null) return item;
  const { details: _none, ...error } = item.error;
  return { ...item, error: error as T['error'] };
}

/** The JSON Schema of a result, as restItemResult answers it (from the one derived from the document). */
export function restItemResultSchema(derived: JsonSchema): JsonSchema {
  const properties = derived.properties as Record<string, JsonSchema>;
  const error = properties.error;
  const errorProperties = error.properties as Record<string, JsonSchema>;
  return {
    ...derived,
    properties: {
      ...properties,
      error: {
        ...error,
        properties: { ...errorProperties, details: { ...errorProperties.details, type: 'array' } },
        required: (error.required as string[]).filter((name) => name !== 'details'),
      },
    },
  };
}
