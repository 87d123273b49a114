import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { prepareOperation } from '../../src/http/rest/operation.js';
import { schema } from '../../src/app/schema.js';

describe('prepareOperation', () => {
  it('prepares a document whose selection uses a fragment, and checks its variables', () => {
    const operation = prepareOperation(
      schema,
      parse(`query counts($notificationTypeFilter: String) { notificationCounts(notificationTypeFilter: $notificationTypeFilter) { ...Counts } }
             fragment Counts on NotificationCounts { unreadCount readCount }`),
    );
    expect([operation.name, operation.type, operation.rootField]).toEqual(['counts', 'query', 'notificationCounts']);
    expect(operation.variables.check({ notificationTypeFilter: 'deal_created' })).toEqual([]);
    expect(operation.variables.check({ notificationTypeFilter: 5 })).toEqual([
      { path: 'variables.notificationTypeFilter', message: 'must be a string or null' },
    ]);
  });
});
