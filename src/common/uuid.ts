const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Checked before ids reach a `uuid` column, where a malformed one would fail the query. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
