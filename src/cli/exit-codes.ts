/**
 * The admin CLI's exit codes (README, "Operating"). Usage, unreachable and credential failures
 * take their sysexits(3) numbers so scripts can tell them from a refusal by the service.
 */
export const EXIT = {
  /** Done. */
  ok: 0,
  /** The service refused the request (its GraphQL error code is printed), or a request failed midway. */
  failed: 1,
  /** `records import` finished, but rejected some records; the others were committed. */
  recordsRejected: 2,
  /** Unknown command or option, missing or malformed argument, unreadable input file. */
  usage: 64,
  /** The service could not be reached at the URL. */
  unreachable: 69,
  /** No platform token, or the service refused it. */
  unauthenticated: 77,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A `details` entry of a GraphQL error: which input field, and why. */
export interface ErrorDetail {
  path?: string;
  message: string;
}

/** A failure the CLI explains in one message (no stack trace) and exits with. */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    readonly code?: string,
    readonly details: readonly ErrorDetail[] = [],
  ) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(EXIT.usage, message);
