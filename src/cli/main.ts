/** `npm run admin -- <command>`; command groups live in commands/. */
import { Command, CommanderError } from 'commander';
import { pathToFileURL } from 'node:url';
import { creditCommands } from './commands/credits.js';
import { keyCommands } from './commands/keys.js';
import { notificationCommands } from './commands/notifications.js';
import { organizationCommands } from './commands/organizations.js';
import { recordCommands } from './commands/records.js';
import { skipTraceKeyCommands } from './commands/skip-trace-keys.js';
import { usageCommands } from './commands/usage.js';
import { userCommands } from './commands/users.js';
import { addGlobalOptions, DEFAULT_API_URL, type RunState } from './context.js';
import { CliError, EXIT } from './exit-codes.js';
import { Output, processIo, type CliIo } from './output.js';

const EXIT_CODES_HELP = `
Environment:
  API_URL             the service (default ${DEFAULT_API_URL})
  INTERNAL_API_TOKEN  the platform token the service was started with; unset, for a service on this
                      machine, the quick start's development token in DATA_DIR (default ./data)

Exit codes:
  ${EXIT.ok}   done
  ${EXIT.failed}   the service refused the request (its error code is printed), or it failed midway
  ${EXIT.recordsRejected}   records import: some records were rejected (listed with their lines); the rest were imported
  ${EXIT.usage}  usage: unknown command or option, bad argument, unreadable file
  ${EXIT.unreachable}  the service cannot be reached at the URL
  ${EXIT.unauthenticated}  no platform token, or the service refused it`;

export function buildProgram(io: CliIo, state: RunState): Command {
  const program = new Command('admin')
    .description(
      'Provision organizations, users, keys and credits, import property records, read skip trace usage and publish notifications, through a running service.',
    )
    .usage('[--url URL] [--token TOKEN] [--json] <command>')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', EXIT_CODES_HELP);
  addGlobalOptions(program);
  organizationCommands(program, io, state);
  userCommands(program, io, state);
  keyCommands(program, io, state);
  creditCommands(program, io, state);
  skipTraceKeyCommands(program, io, state);
  recordCommands(program, io, state);
  usageCommands(program, io, state);
  notificationCommands(program, io, state);
  return program;
}

/** `argv` without `node` and the script. */
export async function runAdmin(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const state: RunState = { exitCode: EXIT.ok };
  try {
    await buildProgram(io, state).parseAsync([...argv], { from: 'user' });
    return state.exitCode;
  } catch (error) {
    // Commander has printed its own message (or the help) already.
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (!(error instanceof CliError)) throw error;
    (state.out ?? new Output(io, argv.includes('--json'))).error(error);
    return error.exitCode;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runAdmin(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (error: unknown) => {
      console.error('error: unexpected failure:', error);
      process.exitCode = EXIT.failed;
    },
  );
}
