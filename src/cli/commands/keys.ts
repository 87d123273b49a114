import { Option, type Command } from 'commander';
import { graphqlDocument } from '../client.js';
import { action, type CommandContext, type RunState } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../output.js';
import { addPageOptions, listPages, type Page } from './pages.js';

const SCOPES = ['READ', 'WRITE', 'ADMIN'] as const;
type Scope = (typeof SCOPES)[number];

export interface IssuedKey {
  id: string;
  secret: string;
  hint: string;
  scopes: Scope[];
  createdAt: string;
  createdBy: string;
}

interface ApiKey {
  id: string;
  hint: string;
  scopes: Scope[];
  createdAt: string;
  createdBy: string | null;
  revokedAt: string | null;
  [field: string]: unknown;
}

export const ISSUED_KEY_FIELDS = 'id secret hint scopes createdAt createdBy';

const CREATE = graphqlDocument<{ createApiKey: IssuedKey }, { userId: string; scopes: Scope[] }>(
  `mutation ($userId: ID!, $scopes: [Scope!]!) { createApiKey(userId: $userId, scopes: $scopes) { ${ISSUED_KEY_FIELDS} } }`,
);
const LIST = graphqlDocument<{ apiKeys: Page<ApiKey> }, { userId: string; first: number; after: string | null }>(
  `query ($userId: ID!, $first: Int!, $after: String) { apiKeys(userId: $userId, first: $first, after: $after) { nodes { id hint scopes createdAt createdBy revokedAt } nextCursor } }`,
);
const REVOKE = graphqlDocument<{ revokeApiKey: boolean }, { id: string }>(`mutation ($id: ID!) { revokeApiKey(id: $id) }`);

/** The one place a secret is printed: when it is issued. */
export function printIssuedKey({ out }: CommandContext, key: IssuedKey): void {
  out.record({ ...key });
  out.note('This secret is shown once: store it now. Afterwards only its hint is shown.');
}

function scopesOf(value: string): Scope[] {
  const scopes = [...new Set(value.split(',').map((s) => s.trim().toUpperCase()))];
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (scopes.length === 0 || unknown.length > 0)
    throw new CliError(EXIT.usage, `--scopes takes a comma-separated list of ${SCOPES.join(', ')}; not ${unknown.join(', ') || 'empty'}.`);
  return scopes as Scope[];
}

export function keyCommands(program: Command, io: CliIo, state: RunState): void {
  const key = program.command('key').description('gateway keys of a user: issue (secret shown once), list by hint, revoke');

  key
    .command('create')
    .description('issue a gateway key acting as a user; prints its secret, the only time it is shown')
    .requiredOption('--user <user-id>', 'the key acts as this user')
    .addOption(new Option('--scopes <list>', 'comma-separated: READ, WRITE, ADMIN (ADMIN only for ADMIN users)').default('READ,WRITE'))
    .action(
      action(io, state, async (ctx, _args, options) => {
        const scopes = scopesOf(options.scopes as string);
        const { createApiKey } = await ctx.client().request(CREATE, { userId: options.user as string, scopes });
        printIssuedKey(ctx, createApiKey);
      }),
    );

  addPageOptions(
    key
      .command('list')
      .description('list a user’s keys, newest first, revoked ones included (hints only, never a secret)')
      .requiredOption('--user <user-id>'),
  ).action(
    action(io, state, (ctx, _args, options) =>
      listPages(
        ctx,
        options,
        async (first, after) => (await ctx.client().request(LIST, { userId: options.user as string, first, after })).apiKeys,
        ['id', 'hint', 'scopes', 'createdAt', 'createdBy', 'revokedAt'],
      ),
    ),
  );

  key
    .command('revoke')
    .description('revoke a gateway key by id; refused from the next request on, on every instance')
    .argument('<key-id>')
    .action(
      action(io, state, async (ctx, [id]) => {
        const { revokeApiKey } = await ctx.client().request(REVOKE, { id });
        ctx.out.record({ id, revoked: revokeApiKey });
      }),
    );
}
