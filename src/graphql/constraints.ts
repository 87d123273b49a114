/**
 * JSON Schema keywords for an argument or input field, kept in its `extensions.constraints`. The
 * resolvers enforce the same limits; discovery documents and the REST routes' validation read
 * them from the schema, so the limits are stated once.
 */
export const constraints = (keywords: Record<string, unknown>) => ({ extensions: { constraints: keywords } });
