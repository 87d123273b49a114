import type { FastifyInstance } from 'fastify';
import { Ajv } from 'ajv';
import { randomUUID } from 'node:crypto';
import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import type { OrganizationPrincipal } from '../auth/principal.js';
import type { OperationExecutor } from '../graphql/execute-operation.js';
import { schema } from '../graphql/schema.js';
import { variablesJsonSchema } from '../gateway/json-schema.js';
import { variableErrorDetails } from '../gateway/operation-registry.js';
import { ApiError } from '../infra/http/api-error.js';
import { credentialGuard } from '../infra/http/credential-guard.js';
import { concurrencyMessage, takeInFlightSlot } from './skip-trace-limits.js';
import type { Services } from '../services.js';
import { recordAudit } from './skip-trace.service.js';

/** The REST route is this one mutation: the body is its `input`, `extensions.code` its status. */
const SKIP_TRACE_DOCUMENT = parse(`mutation skipTrace($input: SkipTraceInput!) {
  skipTrace(input: $input) { id status persons { firstName lastName middleName age phones { number type } emails } }
}`);

declare module 'fastify' {
  interface FastifyRequest {
    startedAt?: number;
  }
}

export function registerSkipTraceRoutes(app: FastifyInstance, deps: { services: Services; executeOperation: OperationExecutor }) {
  const { services, executeOperation } = deps;
  const operation = SKIP_TRACE_DOCUMENT.definitions[0] as OperationDefinitionNode;
  const validateVariables = new Ajv({ strict: false, allErrors: true }).compile(variablesJsonSchema(schema, operation));
  const limits = services.skipTraceLimits;

  const guard = credentialGuard({ services, accepts: (principal): principal is OrganizationPrincipal => principal.type === 'organization' });

  const reachedTrace = new WeakSet<object>();

  app.post('/api/v1/skiptrace', {
    // Calls refused before the mutation ran (rate, concurrency, body) are audited here; the
    // mutation audits every call it handles.
    onResponse: async (request, reply) => {
      if (request.principal?.type !== 'organization' || reachedTrace.has(request)) return;
      await recordAudit(services.sql, randomUUID(), request.principal, request.startedAt ?? performance.now(), {
        outcome: request.errorCode ?? String(reply.statusCode),
        cacheKey: null,
        cacheHit: false,
        charged: false,
      }).catch((error) => request.log.error({ err: error }, 'could not record the skip trace audit row'));
    },
    // Contract order: credential, rate window, then concurrency, all before the body is read.
    onRequest: [
      async (request) => {
        request.startedAt = performance.now();
      },
      guard,
      async (request) => {
        // Freed when the response is done or the caller goes away, whichever comes first.
        const release = takeInFlightSlot(limits, (request.principal as OrganizationPrincipal).keyId, request.client.signal);
        if (!release) throw new ApiError('concurrency_limit', concurrencyMessage(limits.inFlight.max), undefined, { 'Retry-After': 1 });
        request.client.onDone(release);
      },
    ],
    handler: async (request, reply) => {
      const body = request.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError('invalid_request', 'The body must be a JSON object with an address.');
      if (!validateVariables({ input: body })) {
        const details = variableErrorDetails(validateVariables, 'is not a known field').map((d) => ({ ...d, path: d.path.replace(/^variables\.input\.?/, '') || '(body)' }));
        throw new ApiError('invalid_request', 'The skip trace request is invalid.', details);
      }
      reachedTrace.add(request);
      // The window and the in-flight slot were taken above: the mutation must not take them again.
      const { data, error } = await executeOperation(SKIP_TRACE_DOCUMENT, { input: body }, {
        principal: request.principal!,
        requestId: request.id,
        log: request.log,
        client: request.client,
        skipTraceAdmitted: true,
      });
      if (error) throw ApiError.fromGraphQL(error);
      return reply.send(data?.skipTrace);
    },
  });
}
