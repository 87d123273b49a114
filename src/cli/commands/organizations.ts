import { Argument, type Command } from 'commander';
import { graphqlDocument } from '../client.js';
import { action, type RunState } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../output.js';
import { addPageOptions, listPages, type Page } from './pages.js';

export interface Organization {
  id: string;
  name: string;
  skipTraceEnabled: boolean;
  skipTraceCredits: number;
  skipTraceKey: { id: string; hint: string; createdAt: string; createdBy: string | null } | null;
}

export const ORGANIZATION_FIELDS = 'id name skipTraceEnabled skipTraceCredits skipTraceKey { id hint createdAt createdBy }';

const CREATE = graphqlDocument<{ createOrganization: Organization }, { name: string; skipTraceEnabled: boolean }>(
  `mutation ($name: String!, $skipTraceEnabled: Boolean!) { createOrganization(name: $name, skipTraceEnabled: $skipTraceEnabled) { ${ORGANIZATION_FIELDS} } }`,
);
const LIST = graphqlDocument<{ organizations: Page<Organization> }, { first: number; after: string | null }>(
  `query ($first: Int!, $after: String) { organizations(first: $first, after: $after) { nodes { ${ORGANIZATION_FIELDS} } nextCursor } }`,
);
const SHOW = graphqlDocument<{ organization: Organization | null }, { id: string }>(
  `query ($id: ID!) { organization(id: $id) { ${ORGANIZATION_FIELDS} } }`,
);
const SET_SKIP_TRACE = graphqlDocument<{ setSkipTraceEnabled: Organization }, { organizationId: string; enabled: boolean }>(
  `mutation ($organizationId: ID!, $enabled: Boolean!) { setSkipTraceEnabled(organizationId: $organizationId, enabled: $enabled) { ${ORGANIZATION_FIELDS} } }`,
);

/** The key only by hint. */
export const organizationRecord = (o: Organization) => ({
  id: o.id,
  name: o.name,
  skipTraceEnabled: o.skipTraceEnabled,
  skipTraceCredits: o.skipTraceCredits,
  skipTraceKey: o.skipTraceKey?.hint ?? null,
});

export function organizationCommands(program: Command, io: CliIo, state: RunState): void {
  const org = program.command('org').description('organizations: create, list, show, turn skip tracing on or off');

  org
    .command('create')
    .description('create an organization (skip tracing on unless --skip-trace-disabled)')
    .argument('<name>', 'its name')
    .option('--skip-trace-disabled', 'create it with skip tracing off')
    .action(
      action(io, state, async (ctx, [name], options) => {
        const { createOrganization } = await ctx.client().request(CREATE, { name, skipTraceEnabled: !options.skipTraceDisabled });
        ctx.out.record(organizationRecord(createOrganization));
      }),
    );

  addPageOptions(org.command('list').description('list organizations, newest first')).action(
    action(io, state, (ctx, _args, options) =>
      listPages(
        ctx,
        options,
        async (first, after) => {
          const { organizations } = await ctx.client().request(LIST, { first, after });
          return { ...organizations, nodes: organizations.nodes.map(organizationRecord) };
        },
        ['id', 'name', 'skipTraceEnabled', 'skipTraceCredits', 'skipTraceKey'],
      ),
    ),
  );

  org
    .command('show')
    .description('show an organization: credits, skip trace feature, its skip trace key’s hint')
    .argument('<organization-id>')
    .action(
      action(io, state, async (ctx, [id]) => {
        const { organization } = await ctx.client().request(SHOW, { id });
        if (!organization) throw new CliError(EXIT.failed, `No organization ${id}.`, 'NOT_FOUND');
        ctx.out.record(organizationRecord(organization));
      }),
    );

  org
    .command('skip-trace')
    .description('turn the skip trace feature on or off for an organization')
    .argument('<organization-id>')
    .addArgument(new Argument('<state>').choices(['on', 'off']))
    .action(
      action(io, state, async (ctx, [organizationId, enabled]) => {
        const { setSkipTraceEnabled } = await ctx.client().request(SET_SKIP_TRACE, { organizationId, enabled: enabled === 'on' });
        ctx.out.record(organizationRecord(setSkipTraceEnabled));
      }),
    );
}
