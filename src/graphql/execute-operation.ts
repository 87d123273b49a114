import type { DocumentNode, ExecutionResult, GraphQLError } from 'graphql';
import type { RequestContext } from './context.js';
import type { Yoga } from './yoga.js';

/**
 * Runs a pre-parsed, pre-validated document through Yoga's envelop pipeline (context, scope
 * auth, error masking): how the REST routes call into the one schema without re-serializing.
 */
export async function executeOperation(
  yoga: Yoga,
  document: DocumentNode,
  variableValues: Record<string, unknown>,
  request: RequestContext,
): Promise<{ data: Record<string, unknown> | null; error: GraphQLError | null }> {
  const { execute, contextFactory, schema } = yoga.getEnveloped(request as never);
  const contextValue = await contextFactory();
  const result = (await execute({ schema, document, variableValues, contextValue })) as ExecutionResult;
  return { data: (result.data as Record<string, unknown> | null | undefined) ?? null, error: result.errors?.[0] ?? null };
}
