import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { runAdmin } from '../../src/cli/main.js';
import type { TestService } from './harness.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

const root = new URL('../..', import.meta.url).pathname;

/** The environment the CLI reads its defaults from, pointed at a test service. */
export const cliEnv = (service: TestService): Record<string, string> => ({
  API_URL: service.baseUrl,
  INTERNAL_API_TOKEN: service.platformToken,
});

/** Runs the CLI's main in this process, with its own argv, environment and captured output. */
export async function admin(argv: string[], env: Record<string, string | undefined>): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin(argv, {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    stderrIsTty: false,
    env,
  });
  return { code, stdout, stderr };
}

/**
 * Runs an npm script as its own process, as an operator would (`npm run --silent admin -- …`).
 * Asynchronous, so that a service running in this process keeps answering it.
 */
export function npmRun(script: string, args: string[], env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['run', '--silent', script, '--', ...args],
      // Only what the CLI needs, so the test's own API_URL / INTERNAL_API_TOKEN (if any) cannot leak in.
      { cwd: root, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, encoding: 'utf8', timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr: stripNpmWarnings(stderr) }),
    );
  });
}

/** npm's own warnings about the machine's npm config are not the CLI's output. */
const stripNpmWarnings = (stderr: string) =>
  stderr
    .split('\n')
    .filter((line) => !line.startsWith('npm warn'))
    .join('\n');

/** A URL where nothing listens: a port the OS just handed out and took back. */
export async function closedUrl(): Promise<string> {
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
  return `http://127.0.0.1:${port}`;
}
