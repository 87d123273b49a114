/**
 * A skip trace passes each stage once: its input is checked once (a REST body against the JSON
 * Schema, the trace then only for the rules that schema does not state), with the same answers
 * as before on either route.
 */
import { describe, expect, it } from 'vitest';
import { atMostCharacters } from '../../src/common/detail-messages.js';
import { RULE_MESSAGES } from '../../src/skip-trace/input-rules.js';
import { checkTraceInput } from '../../src/skip-trace/trace-input.js';
import type { TestService } from '../support/harness.js';
import { postTrace, setupBillingOrg, uniqueAddress, useServiceWithVendor } from '../support/billing.js';

let service: TestService;
useServiceWithVendor({}, (started) => ({ service } = started));

const ADDRESS = { line1: '1 Main St', city: 'Austin', state: 'TX', zip: '78701' };
const SKIP_TRACE = `mutation($input: SkipTraceInput!) { skipTrace(input: $input) { id } }`;

/** The 422's details of `checkTraceInput`, or [] when it passes. */
function detailsOf(run: () => unknown): unknown[] {
  try {
    run();
    return [];
  } catch (error) {
    return (error as { details: unknown[] }).details;
  }
}

describe('the trace input, after the REST layer checked it against the JSON Schema', () => {
  it('does not check again what the JSON Schema states (the ZIP pattern, U+0000): the REST layer refused those', () => {
    const input = { address: { ...ADDRESS, zip: 'abc', city: 'Aus\u0000tin' } };
    expect(detailsOf(() => checkTraceInput(input, true))).toEqual([]);
    expect(detailsOf(() => checkTraceInput(input))).toHaveLength(2);
  });

  it('checks what it does not state: a blank line, a state code, a length in UTF-16 units, the actor', () => {
    const input = {
      address: { ...ADDRESS, line1: '   ', state: 'ZZ', city: '😀'.repeat(150) },
      actor: { type: 'person' as const, firstName: '..', name: 'Acme' },
    };
    const expected = [
      { path: 'address.line1', message: RULE_MESSAGES.blank },
      { path: 'address.city', message: RULE_MESSAGES.tooLong },
      { path: 'address.state', message: RULE_MESSAGES.state },
      { path: 'actor.name', message: RULE_MESSAGES.onlyWithType('entity') },
      { path: 'actor.firstName', message: RULE_MESSAGES.personName },
      { path: 'actor.lastName', message: RULE_MESSAGES.personName },
    ];
    expect(detailsOf(() => checkTraceInput(input, true))).toEqual(expected);
    expect(detailsOf(() => checkTraceInput(input))).toEqual(expected);
  });
});

describe('answers left as they were', () => {
  it('150 emoji (300 UTF-16 units, 150 code points) pass the JSON Schema and are refused by the rule, on REST and /graphql alike', async () => {
    const org = await setupBillingOrg(service, 1);
    const address = { ...uniqueAddress(), line1: '😀'.repeat(150) };
    const rest = await postTrace(service, org.key, { address });
    expect(rest.status).toBe(422);
    expect(rest.body.error).toEqual({
      requestId: expect.any(String),
      code: 'invalid_request',
      message: 'The skip trace request is invalid.',
      details: [{ path: 'address.line1', message: atMostCharacters(200) }],
    });
    const graphql = await service.graphql(SKIP_TRACE, { input: { address } }, org.key);
    expect(graphql.body.errors[0].extensions.details).toEqual([{ path: 'address.line1', message: atMostCharacters(200) }]);
  });

  it('a body breaking a rule the JSON Schema states and one it does not: the REST layer names the first only, as before', async () => {
    const org = await setupBillingOrg(service, 1);
    const rest = await postTrace(service, org.key, { address: { ...uniqueAddress(), line1: '   ', zip: 'abc' } });
    expect(rest.status).toBe(422);
    expect(rest.body.error.details).toEqual([{ path: 'address.zip', message: RULE_MESSAGES.zip }]);
  });
});

describe('the in-flight slot', () => {
  /** The slots `send` took, counted at the one place a slot is taken. */
  async function slotsTakenBy(send: () => Promise<{ status: number }>): Promise<{ status: number; taken: number }> {
    const admission = service.app.services.skipTraceAdmission;
    const holdSlot = admission.holdSlot;
    let taken = 0;
    admission.holdSlot = (keyId, client) => {
      taken++;
      holdSlot(keyId, client);
    };
    try {
      const { status } = await send();
      return { status, taken };
    } finally {
      admission.holdSlot = holdSlot;
    }
  }

  it('is taken once per request: a REST trace, a REST batch, and both on /graphql', async () => {
    const org = await setupBillingOrg(service, 10);
    const batchItems = { items: [{ address: uniqueAddress() }] };
    const sent = {
      rest: await slotsTakenBy(() => postTrace(service, org.key, { address: uniqueAddress() })),
      restBatch: await slotsTakenBy(() =>
        service.request('/api/v1/skiptrace/batch', {
          method: 'POST',
          headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(batchItems),
        }),
      ),
      graphql: await slotsTakenBy(() => service.graphql(SKIP_TRACE, { input: { address: uniqueAddress() } }, org.key)),
      graphqlBatch: await slotsTakenBy(() =>
        service.graphql(`mutation($items: [SkipTraceItemInput!]!) { skipTraceBatch(items: $items) { id } }`, batchItems, org.key),
      ),
    };
    expect(sent).toEqual({
      rest: { status: 200, taken: 1 },
      restBatch: { status: 200, taken: 1 },
      graphql: { status: 200, taken: 1 },
      graphqlBatch: { status: 200, taken: 1 },
    });
  });
});
