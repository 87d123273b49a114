import { parse, type GraphQLSchema } from 'graphql';
import { AppError } from '../../../common/errors.js';
import type { OrganizationPrincipal } from '../../../schema/principal.js';
import { prepareOperation } from '../operation.js';
import type { RestRoute } from '../rest-route.js';
import { SKIP_TRACE_KEY } from './skip-trace.route.js';

const ROTATE_DOCUMENT = parse(`mutation rotateSkipTraceWebhookSecret {
  rotateSkipTraceWebhookSecret { secret createdAt }
}`);

const isEmptyObject = (body: unknown) =>
  typeof body === 'object' && body !== null && !Array.isArray(body) && Object.keys(body).length === 0;

/** `POST /api/v1/skiptrace/webhook-secret`: the `rotateSkipTraceWebhookSecret` mutation; no body (or `{}`). */
export function webhookSecretRoute(schema: GraphQLSchema): RestRoute<OrganizationPrincipal> {
  const operation = prepareOperation(schema, ROTATE_DOCUMENT);
  return {
    method: 'POST',
    path: '/api/v1/skiptrace/webhook-secret',
    summary: "Issues the organization's webhook signing secret, replacing any earlier one; shown only in this answer.",
    credential: SKIP_TRACE_KEY,
    toCall(body) {
      if (body !== undefined && !isEmptyObject(body))
        throw new AppError('invalid_request', 'The body must be empty or {}.', [{ path: '(body)', message: 'Takes no fields.' }]);
      return { operation, variables: {} };
    },
    invalid: { message: 'The request is invalid.' },
    respond: (value) => value,
    // The one answer that carries the secret: no cache along the way may keep it.
    responseHeaders: {
      'Cache-Control': {
        description: '`no-store`: the answer carries the secret, shown only this once.',
        schema: { const: 'no-store' },
        value: () => 'no-store',
      },
    },
    reference: {
      description:
        "`{secret, createdAt}`: `secret` is `whsec_` + base64 of 32 random bytes, the key of every webhook's `webhook-signature` (Standard Webhooks), verifiable with the `standardwebhooks` library. Each call replaces the secret; the old one signs nothing more. Costs no credit.",
      body: { type: 'object', properties: {}, additionalProperties: false },
      response: operation.result,
    },
  };
}
