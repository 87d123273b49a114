import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandedFieldCount, MAX_COMPILED_FIELDS } from '../../src/http/graphql/compiled-execution.js';
import { distinctFeedDocument } from '../support/attack-documents.js';
import { publish, startService, type Provisioned, type TestService } from '../support/harness.js';

describe('which documents are compiled', () => {
  it('counts fields with fragments expanded and aliases counted, and stops past the limit', () => {
    expect(expandedFieldCount(parse('{ notificationCounts { unreadCount readCount } }'), undefined, 100)).toBe(3);
    expect(
      expandedFieldCount(
        parse(
          '{ a: notificationCounts { ...C } b: notificationCounts { ...C } } fragment C on NotificationCounts { unreadCount readCount }',
        ),
        undefined,
        100,
      ),
    ).toBe(6);
    expect(expandedFieldCount(parse(distinctFeedDocument(1)), undefined, 1000)).toBeGreaterThan(MAX_COMPILED_FIELDS);
    expect(expandedFieldCount(parse('{ __schema { queryType { name } } }'), undefined, 100)).toBe(Infinity);
    expect(expandedFieldCount(parse('query A { __typename } query B { notificationCounts { unreadCount } }'), 'B', 100)).toBe(2);
  });
});

describe('compiled and interpreted execution agree', () => {
  let service: TestService;
  let user: Provisioned;
  beforeAll(async () => {
    service = await startService();
    user = await service.provision({ scopes: ['READ', 'WRITE'] });
    await publish(service, user.userId, [{ title: 'One' }, { title: 'Two', notificationType: 'task_overdue' }]);
  });
  afterAll(() => service?.close());

  it('answers a repeated document (compiled from its second request) exactly as its first', async () => {
    const query = `query Feed($limit: Int) { notifications(limit: $limit) { total hasUnread notifications { title notificationType isSeen } } notificationCounts { unreadCount readCount } }`;
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await service.graphql(query, { limit: 5 }, user.key)).body);
    expect(answers[0].data.notifications.total).toBe(2);
    for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
    // Errors keep their shape on the compiled path too.
    const bad = `query Bad { notifications(cursor: "not-a-cursor") { total } }`;
    const first = (await service.graphql(bad, {}, user.key)).body;
    const again = (await service.graphql(bad, {}, user.key)).body;
    expect(first.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const shape = (body: any) => ({
      data: body.data,
      errors: body.errors.map((e: any) => ({ message: e.message, path: e.path, extensions: e.extensions })),
    });
    expect(shape(again)).toEqual(shape(first));
  });
});
