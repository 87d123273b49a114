import { Argument, Option, type Command } from 'commander';
import { graphqlDocument } from '../client.js';
import { action, type RunState } from '../context.js';
import type { CliIo } from '../output.js';
import { addPageOptions, listPages, type Page } from './pages.js';

const ROLES = ['ADMIN', 'MEMBER'] as const;
type Role = (typeof ROLES)[number];

interface User {
  id: string;
  organizationId: string;
  email: string;
  name: string | null;
  role: Role;
  [field: string]: unknown;
}

const USER_FIELDS = 'id organizationId email name role';

const CREATE = graphqlDocument<{ createUser: User }, { organizationId: string; email: string; name: string | null; role: Role }>(
  `mutation ($organizationId: ID!, $email: String!, $name: String, $role: UserRole!) { createUser(organizationId: $organizationId, email: $email, name: $name, role: $role) { ${USER_FIELDS} } }`,
);
const LIST = graphqlDocument<{ users: Page<User> }, { organizationId: string; first: number; after: string | null }>(
  `query ($organizationId: ID!, $first: Int!, $after: String) { users(organizationId: $organizationId, first: $first, after: $after) { nodes { ${USER_FIELDS} } nextCursor } }`,
);
const SET_ROLE = graphqlDocument<{ setUserRole: User }, { userId: string; role: Role }>(
  `mutation ($userId: ID!, $role: UserRole!) { setUserRole(userId: $userId, role: $role) { ${USER_FIELDS} } }`,
);

export function userCommands(program: Command, io: CliIo, state: RunState): void {
  const user = program.command('user').description('users: create, list, change role');

  user
    .command('create')
    .description('create a user in an organization')
    .requiredOption('--org <organization-id>', 'the organization')
    .requiredOption('--email <email>', 'the user’s email')
    .option('--name <name>', 'the user’s name')
    .addOption(new Option('--role <role>', 'ADMIN may hold ADMIN-scoped keys').choices(ROLES).default('MEMBER'))
    .action(
      action(io, state, async (ctx, _args, options) => {
        const { createUser } = await ctx.client().request(CREATE, {
          organizationId: options.org as string,
          email: options.email as string,
          name: (options.name as string | undefined) ?? null,
          role: options.role as Role,
        });
        ctx.out.record(createUser);
      }),
    );

  addPageOptions(
    user.command('list').description('list an organization’s users, newest first').requiredOption('--org <organization-id>'),
  ).action(
    action(io, state, (ctx, _args, options) =>
      listPages(
        ctx,
        options,
        async (first, after) => (await ctx.client().request(LIST, { organizationId: options.org as string, first, after })).users,
        ['id', 'email', 'name', 'role'],
      ),
    ),
  );

  user
    .command('role')
    .description('set a user’s role; lowering to MEMBER voids the ADMIN scope of the user’s keys at once')
    .argument('<user-id>')
    .addArgument(new Argument('<role>').choices(ROLES))
    .action(
      action(io, state, async (ctx, [userId, role]) => {
        const { setUserRole } = await ctx.client().request(SET_ROLE, { userId, role: role as Role });
        ctx.out.record(setUserRole);
      }),
    );
}
