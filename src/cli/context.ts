import { InvalidArgumentError, type Command } from 'commander';
import { readDevPlatformToken } from '../infra/dev-platform-token.js';
import { PlatformClient } from './client.js';
import { CliError, EXIT, usageError, type ExitCode } from './exit-codes.js';
import { Output, type CliIo } from './output.js';

export const DEFAULT_API_URL = 'http://localhost:4000';

interface GlobalOptions {
  url?: string;
  token?: string;
  json?: boolean;
}

export interface CommandContext {
  /** Made on first use, so `--help` and usage errors need no token. */
  client(): PlatformClient;
  out: Output;
  io: CliIo;
}

export interface RunState {
  exitCode: ExitCode;
  out?: Output;
}

export function addGlobalOptions(program: Command): Command {
  return program
    .option('--url <url>', `the running service (default: $API_URL, else ${DEFAULT_API_URL})`)
    .option('--token <token>', 'the platform token (default: $INTERNAL_API_TOKEN; prefer the variable: arguments show in process lists)')
    .option('--json', 'print results as JSON on stdout (errors as JSON on stderr)');
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Only for a service on this machine: the token is read from its data dir. */
function localDevToken(url: string, env: CliIo['env']): string | undefined {
  return LOOPBACK.has(new URL(url).hostname) ? readDevPlatformToken(env.DATA_DIR || './data') : undefined;
}

function clientFor(options: GlobalOptions, env: CliIo['env']): PlatformClient {
  const url = options.url ?? (env.API_URL || DEFAULT_API_URL);
  if (!/^https?:\/\//u.test(url) || !URL.canParse(url))
    throw usageError(`--url / API_URL must be an http(s) URL, not ${JSON.stringify(url)}.`);
  const token = options.token ?? (env.INTERNAL_API_TOKEN || localDevToken(url, env));
  if (!token)
    throw new CliError(
      EXIT.unauthenticated,
      'No platform token: set INTERNAL_API_TOKEN (the value the service was started with, or the development token ' +
        'a quick-start service prints and keeps in its data dir) or pass --token.',
    );
  return new PlatformClient(url, token);
}

type Action = (context: CommandContext, args: string[], options: Record<string, unknown>) => Promise<ExitCode | void>;

export function action(io: CliIo, state: RunState, run: Action) {
  return async (...params: unknown[]) => {
    const command = params.at(-1) as Command;
    const options = params.at(-2) as Record<string, unknown>;
    const globals = command.optsWithGlobals<GlobalOptions>();
    const out = new Output(io, Boolean(globals.json));
    state.out = out;
    let client: PlatformClient | undefined;
    const context: CommandContext = { out, io, client: () => (client ??= clientFor(globals, io.env)) };
    state.exitCode = (await run(context, params.slice(0, -2) as string[], options)) ?? EXIT.ok;
  };
}

export const integerIn = (min: number, max: number) => (value: string) => {
  const integer = Number(value);
  if (!/^-?\d+$/u.test(value.trim()) || !Number.isSafeInteger(integer) || integer < min || integer > max)
    throw new InvalidArgumentError(`must be an integer from ${min} to ${max}.`);
  return integer;
};
