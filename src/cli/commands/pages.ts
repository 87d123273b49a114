import { Option, type Command } from 'commander';
import { integerIn, type CommandContext } from '../context.js';

export interface Page<T> {
  nodes: T[];
  nextCursor: string | null;
}

/** The service's limit (README, "Finding organizations, users and keys"). */
const PAGE_MAX = 200;

export const addPageOptions = (command: Command): Command =>
  command
    .addOption(new Option('--first <n>', `rows per page, 1 to ${PAGE_MAX}`).argParser(integerIn(1, PAGE_MAX)).default(50))
    .option('--after <cursor>', 'continue after this cursor (a previous page’s nextCursor)')
    .option('--all', 'follow nextCursor to the last page');

interface PageOptions {
  first: number;
  after?: string;
  all?: boolean;
}

export async function listPages<T extends Record<string, unknown>>(
  { out }: CommandContext,
  options: Record<string, unknown>,
  fetchPage: (first: number, after: string | null) => Promise<Page<T>>,
  columns: readonly string[],
): Promise<void> {
  const { first, after, all } = options as unknown as PageOptions;
  let page = await fetchPage(first, after ?? null);
  const nodes = [...page.nodes];
  while (all && page.nextCursor) {
    page = await fetchPage(first, page.nextCursor);
    nodes.push(...page.nodes);
  }
  out.table(nodes, columns, { nodes, nextCursor: page.nextCursor });
  if (page.nextCursor) out.note(`More rows: pass --after ${page.nextCursor} (or --all).`);
}
