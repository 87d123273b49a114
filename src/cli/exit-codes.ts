/** sysexits(3) numbers, so scripts can tell usage, network and credential failures from a refusal (README, "Operating"). */
export const EXIT = {
  ok: 0,
  /** Also a request that failed midway. */
  failed: 1,
  /** The other records were committed. */
  recordsRejected: 2,
  /** Also an unreadable input file. */
  usage: 64,
  unreachable: 69,
  unauthenticated: 77,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export interface ErrorDetail {
  path?: string;
  message: string;
}

/** Printed as one message, without a stack trace. */
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
