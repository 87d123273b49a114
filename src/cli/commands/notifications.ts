import type { Command } from 'commander';
import { graphqlDocument } from '../client.js';
import { action, type RunState } from '../context.js';
import type { CliIo } from '../output.js';

interface Published {
  id: string;
  notificationType: string;
  title: string;
  createdAt: string;
}

const PUBLISH = graphqlDocument<{ publishNotifications: Published[] }, { input: Array<Record<string, string>> }>(
  `mutation ($input: [PublishNotificationInput!]!) { publishNotifications(input: $input) { id notificationType title createdAt } }`,
);

const OPTIONAL_FIELDS = {
  contactId: '--contact-id <id>',
  dealId: '--deal-id <id>',
  noteId: '--note-id <id>',
  replyId: '--reply-id <id>',
  taskId: '--task-id <id>',
  callId: '--call-id <id>',
  actionType: '--action-type <type>',
  actionTargetId: '--action-target-id <id>',
  createdAt: '--created-at <instant>',
} as const;

export function notificationCommands(program: Command, io: CliIo, state: RunState): void {
  const notifications = program.command('notifications').description('notifications: publish one into a user’s feed');

  const publish = notifications
    .command('publish')
    .description('publish a notification to a user’s feed (badge counts include it at once; open streams get it)')
    .requiredOption('--user <user-id>', 'the user whose feed gets it')
    .requiredOption('--type <notification-type>', 'a type of the catalog, e.g. task_assigned')
    .requiredOption('--title <title>', 'the text to show')
    .requiredOption('--body <body>', 'the longer text');
  for (const flags of Object.values(OPTIONAL_FIELDS)) publish.option(flags);
  publish.action(
    action(io, state, async (ctx, _args, options) => {
      const item: Record<string, string> = {
        userId: options.user as string,
        notificationType: options.type as string,
        title: options.title as string,
        body: options.body as string,
      };
      for (const field of Object.keys(OPTIONAL_FIELDS)) if (typeof options[field] === 'string') item[field] = options[field] as string;
      const { publishNotifications } = await ctx.client().request(PUBLISH, { input: [item] });
      ctx.out.record({ ...publishNotifications[0] });
    }),
  );
}
