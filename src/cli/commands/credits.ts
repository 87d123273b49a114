import type { Command } from 'commander';
import { graphqlDocument } from '../client.js';
import { action, integerIn, type RunState } from '../context.js';
import type { CliIo } from '../output.js';
import { ORGANIZATION_FIELDS, organizationRecord, type Organization } from './organizations.js';

const ADD = graphqlDocument<{ addSkipTraceCredits: Organization }, { organizationId: string; amount: number; reference: string }>(
  `mutation ($organizationId: ID!, $amount: Int!, $reference: String!) { addSkipTraceCredits(organizationId: $organizationId, amount: $amount, reference: $reference) { ${ORGANIZATION_FIELDS} } }`,
);

export function creditCommands(program: Command, io: CliIo, state: RunState): void {
  const credits = program.command('credits').description('skip trace credits');

  credits
    .command('add')
    .description('record a credit purchase; a repeated --reference with the same amount is applied once')
    .argument('<organization-id>')
    .argument('<amount>', 'credits to add, 1 or more', integerIn(1, 2_147_483_647))
    .requiredOption('--reference <reference>', 'the purchase’s unique reference (an invoice or order id): makes a retry safe')
    .action(
      action(io, state, async (ctx, [organizationId, amount], options) => {
        const { addSkipTraceCredits } = await ctx.client().request(ADD, {
          organizationId,
          amount: amount as unknown as number,
          reference: options.reference as string,
        });
        ctx.out.record(organizationRecord(addSkipTraceCredits));
      }),
    );
}
