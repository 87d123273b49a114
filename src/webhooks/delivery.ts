/** Connects to the checked addresses themselves, so the name cannot be rebound between check and connect. */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { AttemptOutcome } from './webhooks.data.js';
import type { WebhookTarget } from './webhook-url.js';

/** Also how much of a response body is read. */
export const EXCERPT_CHARS = 200;

export interface WebhookMessage {
  id: string;
  type: string;
  createdAt: Date;
  data: unknown;
}

/** Standard Webhooks headers. */
export function signedRequest(message: WebhookMessage, secret: string, now = new Date()) {
  const body = JSON.stringify({ type: message.type, timestamp: message.createdAt.toISOString(), data: message.data });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': message.id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(message.id, now, body),
    },
  };
}

function pinnedLookup(target: WebhookTarget): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, target.addresses);
    else callback(null, target.addresses[0].address, target.addresses[0].family);
  };
}

const shorten = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, EXCERPT_CHARS);

/** Never a stack. */
function noAnswer(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return 'no answer in time';
  const code = (error as NodeJS.ErrnoException).code;
  return shorten(code ? `no answer: ${code}` : `no answer: ${(error as Error).message}`);
}

/** Only a 2xx delivers; a redirect is a failure (node:http never follows one). */
export function sendWebhook(
  target: WebhookTarget,
  request: { body: string; headers: Record<string, string> },
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  const transport = target.url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    // Once a status arrived, it is the outcome, whatever happens to the rest of the body.
    let answered = false;
    const outgoing = transport.request(
      target.url,
      {
        method: 'POST',
        headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body), 'user-agent': 'skiptrace-webhooks' },
        lookup: pinnedLookup(target),
        // A fresh connection each time: a pooled one would skip the check of this attempt's addresses.
        agent: false,
        signal,
      },
      (response) => {
        answered = true;
        const status = response.statusCode ?? 0;
        let excerpt = '';
        const done = () => {
          response.destroy();
          const delivered = status >= 200 && status < 300;
          resolve({ status, delivered, error: delivered ? null : shorten(`HTTP ${status}${excerpt ? `: ${excerpt}` : ''}`) });
        };
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          excerpt += chunk.slice(0, EXCERPT_CHARS - excerpt.length);
          if (excerpt.length >= EXCERPT_CHARS) done();
        });
        response.once('end', done);
        response.once('error', done);
        response.once('close', done);
      },
    );
    outgoing.once('error', (error) => {
      if (!answered) resolve({ status: null, delivered: false, error: noAnswer(error, signal) });
    });
    outgoing.end(request.body);
  });
}
