import { describe, expect, it } from 'vitest';
import { schema } from '../../src/app/schema.js';
import { buildOperationRegistry } from '../../src/http/gateway/gateway-call.route.js';
import { skipTraceRoute } from '../../src/http/rest/routes/skip-trace.route.js';
import { skipTraceAccountRoute, skipTraceUsageRoute } from '../../src/http/rest/routes/skip-trace-billing.routes.js';

/**
 * The variables' validators are compiled at their first check, not at start-up (rest/operation.ts):
 * this compiles every one, so a schema Ajv refuses fails here rather than at a caller's request.
 */
describe('variables validators', () => {
  const gateway = [...buildOperationRegistry(schema).values()].map((op) => op.prepared);
  const routes = [skipTraceRoute(schema), skipTraceAccountRoute(schema), skipTraceUsageRoute(schema)].map(
    (route) => route.toCall({}).operation,
  );

  it('covers the gateway operations and the skip trace routes', () => {
    expect(gateway.length).toBeGreaterThan(5);
    expect(routes.map((op) => op.name)).toEqual(['skipTrace', 'skipTraceAccount', 'skipTraceUsage']);
  });

  it.each([...gateway, ...routes].map((op) => [op.name, op] as const))('compiles the validator of %s', (_name, operation) => {
    expect(() => operation.variables.compile()).not.toThrow();
    // An unknown variable is refused by every operation's schema, so the compiled validator runs.
    expect(operation.variables.check({ notAVariable: 1 })).toContainEqual({
      path: 'variables.notAVariable',
      message: 'is not a known variable',
    });
  });
});
