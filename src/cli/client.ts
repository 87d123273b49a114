/** The CLI never opens the database, so it works while a server holds an embedded data dir. */
import { CliError, EXIT, type ErrorDetail } from './exit-codes.js';

/** Carries its result and variable types, so each command's call is typed. */
export interface GraphqlDocument<TData, TVariables> {
  readonly query: string;
  /** Never set: carries the types. */
  readonly types?: { data: TData; variables: TVariables };
}

export const graphqlDocument = <TData, TVariables = Record<string, never>>(query: string): GraphqlDocument<TData, TVariables> => ({
  query,
});

interface GraphqlErrorBody {
  message?: string;
  extensions?: { code?: string; details?: ErrorDetail[] };
}

/** Long enough for a 1000-record import batch on a busy database. */
export const REQUEST_TIMEOUT_MS = 120_000;
/** A RATE_LIMITED refusal ran nothing, so it is safe to resend. */
const RATE_LIMIT_RETRIES = 5;
const RETRY_AFTER_MAX_S = 60;

export class PlatformClient {
  readonly endpoint: string;

  constructor(
    readonly url: string,
    private readonly token: string,
  ) {
    this.endpoint = new URL('/graphql', url).href;
  }

  async request<TData, TVariables>(document: GraphqlDocument<TData, TVariables>, variables: TVariables): Promise<TData> {
    for (let attempt = 0; ; attempt++) {
      const response = await this.post(JSON.stringify({ query: document.query, variables }));
      const text = await response.text();
      const body = parseJson(text) as { data?: TData | null; errors?: GraphqlErrorBody[] } | undefined;
      const first = body?.errors?.[0];
      const code = first?.extensions?.code;
      if (response.status === 401 || code === 'UNAUTHENTICATED') {
        throw new CliError(
          EXIT.unauthenticated,
          `The service at ${this.url} refused the platform token: INTERNAL_API_TOKEN (or --token) is wrong, or the service was started without INTERNAL_API_TOKEN.`,
          'UNAUTHENTICATED',
        );
      }
      const retryAfter = Number(response.headers.get('retry-after') ?? 1);
      if (code === 'RATE_LIMITED' && attempt < RATE_LIMIT_RETRIES && retryAfter <= RETRY_AFTER_MAX_S) {
        await new Promise((resolve) => setTimeout(resolve, Math.max(retryAfter, 1) * 1000));
        continue;
      }
      if (first) {
        throw new CliError(
          EXIT.failed,
          first.message ?? 'The request failed.',
          code,
          body!.errors!.flatMap((e) => e.extensions?.details ?? []),
        );
      }
      if (!body || body.data == null)
        throw new CliError(EXIT.failed, `The service at ${this.url} answered HTTP ${response.status} without a GraphQL result.`);
      return body.data;
    }
  }

  private async post(body: string): Promise<Response> {
    try {
      return await fetch(this.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.token}` },
        body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      if (error instanceof Error && error.name === 'TimeoutError')
        throw new CliError(
          EXIT.failed,
          `The service at ${this.url} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s; the request may or may not have been applied.`,
        );
      const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
      throw new CliError(EXIT.unreachable, `Cannot reach the service at ${this.url}${cause}. Is it running? Set API_URL or pass --url.`);
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
