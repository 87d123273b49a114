import type { Command } from 'commander';
import { graphqlDocument } from '../client.js';
import { action, type RunState } from '../context.js';
import type { CliIo } from '../output.js';
import { addPageOptions, listPages } from './pages.js';

interface UsageRequest {
  id: string;
  createdAt: string;
  outcome: string;
  charged: boolean;
  cacheHit: boolean;
  [field: string]: unknown;
}

const USAGE = graphqlDocument<
  { organizationSkipTraceUsage: { requests: UsageRequest[]; nextCursor: string | null } },
  { organizationId: string; from: string | null; to: string | null; limit: number; cursor: string | null }
>(
  `query ($organizationId: ID!, $from: DateTime, $to: DateTime, $limit: Int, $cursor: String) { organizationSkipTraceUsage(organizationId: $organizationId, from: $from, to: $to, limit: $limit, cursor: $cursor) { requests { id createdAt outcome charged cacheHit } nextCursor } }`,
);

export function usageCommands(program: Command, io: CliIo, state: RunState): void {
  addPageOptions(
    program
      .command('usage')
      .description('an organization’s skip trace calls, newest first: outcome, whether charged, cache hit')
      .argument('<organization-id>')
      .option('--from <instant>', 'calls at or after this ISO 8601 instant')
      .option('--to <instant>', 'calls before this ISO 8601 instant'),
  ).action(
    action(io, state, (ctx, [organizationId], options) =>
      listPages(
        ctx,
        options,
        async (first, after) => {
          const { organizationSkipTraceUsage } = await ctx.client().request(USAGE, {
            organizationId,
            from: (options.from as string | undefined) ?? null,
            to: (options.to as string | undefined) ?? null,
            limit: first,
            cursor: after,
          });
          return { nodes: organizationSkipTraceUsage.requests, nextCursor: organizationSkipTraceUsage.nextCursor };
        },
        ['id', 'createdAt', 'outcome', 'charged', 'cacheHit'],
      ),
    ),
  );
}
