import type { ErrorKind } from '../common/errors.js';
import type { JsonSchema } from '../schema/json-schema.js';

/** A route that is not a RestRoute declaration, as the API reference documents it; plain data so lower layers can declare their own. */
export interface DocumentedRoute {
  method: 'GET';
  /** In OpenAPI form: `/api/v1/operations/{operationId}`. */
  path: string;
  summary: string;
  /** Required: the API reference's linters want every operation described. */
  description: string;
  tag: string;
  pathParameters?: Record<string, { description: string; schema: JsonSchema }>;
  /** Every answer that is not an error of the table, by status. */
  responses: Record<number, { description: string; mediaType?: string; schema?: JsonSchema }>;
  /** Errors of the table it answers with, besides those of any route (malformed request, timeout, 500). */
  errors?: readonly ErrorKind[];
  /** The credential it needs, by name (as RestRoute's `credential.name`); public when absent. */
  credential?: string;
  /** Whether its answers carry the rate-limit headers (routes with a credential spend a window). */
  rateLimited?: boolean;
}
