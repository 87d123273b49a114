import type { Command } from 'commander';
import { graphqlDocument } from '../client.js';
import { action, type RunState } from '../context.js';
import type { CliIo } from '../output.js';
import { ISSUED_KEY_FIELDS, printIssuedKey, type IssuedKey } from './keys.js';

type ByOrganization = { organizationId: string };

const GENERATE = graphqlDocument<{ generateSkipTraceKey: IssuedKey }, ByOrganization>(
  `mutation ($organizationId: ID!) { generateSkipTraceKey(organizationId: $organizationId) { ${ISSUED_KEY_FIELDS} } }`,
);
const ROTATE = graphqlDocument<{ rotateSkipTraceKey: IssuedKey }, ByOrganization>(
  `mutation ($organizationId: ID!) { rotateSkipTraceKey(organizationId: $organizationId) { ${ISSUED_KEY_FIELDS} } }`,
);
const REVOKE = graphqlDocument<{ revokeSkipTraceKey: boolean }, ByOrganization>(
  `mutation ($organizationId: ID!) { revokeSkipTraceKey(organizationId: $organizationId) }`,
);

export function skipTraceKeyCommands(program: Command, io: CliIo, state: RunState): void {
  const key = program
    .command('skiptrace-key')
    .description('an organization’s skip trace key: generate, rotate (secrets shown once), revoke');

  const issuing = [
    ['generate', 'issue the organization’s skip trace key (CONFLICT when one is active); prints its secret once', GENERATE],
    ['rotate', 'replace the active key (the old one is refused at once); prints the new secret once', ROTATE],
  ] as const;
  for (const [name, description, document] of issuing) {
    key
      .command(name)
      .description(description)
      .argument('<organization-id>')
      .action(
        action(io, state, async (ctx, [organizationId]) => {
          const issued = await ctx.client().request<Record<string, IssuedKey>, ByOrganization>(document, { organizationId });
          printIssuedKey(ctx, Object.values(issued)[0]);
        }),
      );
  }

  key
    .command('revoke')
    .description('revoke the active key (NOT_FOUND when none is active)')
    .argument('<organization-id>')
    .action(
      action(io, state, async (ctx, [organizationId]) => {
        const { revokeSkipTraceKey } = await ctx.client().request(REVOKE, { organizationId });
        ctx.out.record({ organizationId, revoked: revokeSkipTraceKey });
      }),
    );
}
