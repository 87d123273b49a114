/**
 * `/graphql`'s fast path (src/http/graphql/fast-path.ts) answers exactly as Yoga does. A
 * document goes through Yoga on its first request (seen) and second (compiled there), and through
 * the fast path from its third on, if it qualifies: so each request below is sent three times,
 * the third answer (status, the headers that describe the body, the body) must be byte for byte
 * the second's, and the fast path's counter says which path the third one took.
 *
 * The first answer (graphql-js) is not compared: graphql-js and graphql-jit already differed before
 * the fast path in how they write some errors (jit gives no `locations`, puts `data` first, and words
 * a variable's coercion error differently, which Yoga answers with 200 rather than 400), and the
 * fast path's reference is Yoga running the same compiled document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { MAX_ALIASES } from '../../src/http/graphql/limits.js';
import { publish, startService, type Provisioned, type TestService } from '../support/harness.js';

const FEED_DOCUMENT = readFileSync(new URL('../../src/http/gateway/operations/listNotifications.graphql', import.meta.url), 'utf8');
/** The feed document as a text of its own (documents are compiled, and looked up, by their text). */
const feed = (tag: string) => `${FEED_DOCUMENT}\n# ${tag}\n`;

describe('/graphql fast path', () => {
  let service: TestService;
  let user: Provisioned;
  beforeAll(async () => {
    service = await startService();
    user = await service.provision({ scopes: ['READ', 'WRITE'] });
    await publish(service, user.userId, [{ title: 'One' }, { title: 'Two', notificationType: 'task_overdue' }, { title: 'Three' }]);
  });
  afterAll(() => service?.close());

  const fastPathCount = async () => {
    const metrics = await service.request('/metrics', { headers: { authorization: `Bearer ${service.platformToken}` } });
    return Number(/^crm_graphql_fast_path_requests_total (\d+)/m.exec(metrics.text)?.[1] ?? NaN);
  };

  const send = async (body: unknown, headers: Record<string, string> = {}) => {
    const response = await service.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.key}`, ...headers },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      contentType: response.headers.get('content-type'),
      contentLength: response.headers.get('content-length'),
      transferEncoding: response.headers.get('transfer-encoding'),
      cacheControl: response.headers.get('cache-control'),
      text: response.text,
    };
  };

  /** Three identical requests: the answers agree, and the third took the fast path or did not. */
  const sameOnBothPaths = async (body: unknown, fast: boolean, headers: Record<string, string> = {}) => {
    const before = await fastPathCount();
    const answers = [await send(body, headers), await send(body, headers), await send(body, headers)];
    expect(answers[2]).toEqual(answers[1]);
    expect(await fastPathCount()).toBe(before + (fast ? 1 : 0));
    return { ...answers[2], body: JSON.parse(answers[2].text) };
  };

  it('serves the feed document as Yoga does, from its third request on', async () => {
    const answer = await sameOnBothPaths({ query: FEED_DOCUMENT, variables: {} }, true);
    expect(answer.status).toBe(200);
    expect(answer.contentType).toBe('application/json; charset=utf-8');
    expect(answer.body.data.notifications.total).toBe(3);
    expect(answer.body.data.notifications.notifications.map((n: { title: string }) => n.title).sort()).toEqual(['One', 'Three', 'Two']);
    // Without variables, with an operationName, and asking for the GraphQL response media type.
    await sameOnBothPaths({ query: feed('no variables') }, true);
    await sameOnBothPaths({ query: feed('named'), operationName: 'listNotifications', variables: { limit: 1 } }, true);
    const typed = await sameOnBothPaths({ query: feed('typed'), variables: { seen: false } }, true, {
      accept: 'application/graphql-response+json',
    });
    expect(typed.contentType).toBe('application/graphql-response+json; charset=utf-8');
  });

  it('answers variables of the wrong type and resolver errors as Yoga does, on either media type', async () => {
    const wrongType = await sameOnBothPaths({ query: feed('wrong type'), variables: { limit: 'ten' } }, true);
    expect(wrongType.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(wrongType.body.data).toBeUndefined();
    for (const accept of ['application/json', 'application/graphql-response+json']) {
      const wrong = await sameOnBothPaths({ query: feed(`list for Int ${accept}`), variables: { limit: [1] } }, true, { accept });
      expect(wrong.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      const badCursor = await sameOnBothPaths({ query: feed(`cursor ${accept}`), variables: { cursor: 'not-a-cursor' } }, true, {
        accept,
      });
      expect(badCursor.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      expect(badCursor.body.errors[0].path).toEqual(['notifications']);
    }
  });

  it('runs mutations, and answers their refusals, as Yoga does', async () => {
    const mark = `mutation Mark($ids: [ID!]!) { markNotificationsRead(isSeen: true, notificationIds: $ids) { success updatedCount } }`;
    const marked = await sameOnBothPaths({ query: mark, variables: { ids: ['not-an-id'] } }, true);
    expect(marked.body.data.markNotificationsRead).toEqual({ success: true, updatedCount: 0 });
    const forbidden = await sameOnBothPaths({ query: `mutation { createOrganization(name: "Nope") { id } }` }, true);
    expect(forbidden.body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect(forbidden.status).toBe(200);
  });

  it('leaves to Yoga what it has not validated and compiled, or what Yoga alone answers', async () => {
    const invalid = await sameOnBothPaths({ query: '{ notifications { nope } }' }, false);
    expect(invalid.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const aliases = Array.from({ length: MAX_ALIASES + 1 }, (_, i) => `a${i}: notificationCounts { unreadCount }`).join(' ');
    const limited = await sameOnBothPaths({ query: `{ ${aliases} }` }, false);
    expect(limited.body.errors[0].message).toMatch(/too many aliases/);
    // Compiled under one operation name, asked for another that does not exist.
    const two = 'query A { notificationCounts { unreadCount } } query B { notificationCounts { readCount } }';
    await sameOnBothPaths({ query: two, operationName: 'A' }, true);
    const unknown = await sameOnBothPaths({ query: two, operationName: 'C' }, false);
    expect(unknown.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const none = await sameOnBothPaths({ query: two }, false);
    expect(none.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    // An empty operationName selects no operation, even once the document runs compiled without one.
    const one = '{ notificationCounts { readCount } }';
    await sameOnBothPaths({ query: one }, true);
    const empty = await sameOnBothPaths({ query: one, operationName: '' }, false);
    expect(empty.body.errors[0].message).toBe('Could not determine what operation to execute.');
    // Params, media types and operations the fast path does not take.
    const counts = '{ notificationCounts { unreadCount } }';
    await sameOnBothPaths({ query: counts }, true);
    const extra = await sameOnBothPaths({ query: counts, extra: 1 }, false);
    expect(extra.status).toBe(400);
    await sameOnBothPaths({ query: counts, extensions: {} }, false);
    await sameOnBothPaths({ query: counts, variables: null }, false);
    await sameOnBothPaths({ query: counts, operationName: null }, false);
    await sameOnBothPaths({ query: counts }, false, { accept: 'application/json, multipart/mixed' });
    const notAcceptable = await sameOnBothPaths({ query: counts }, false, { accept: 'text/plain' });
    expect(notAcceptable.status).toBe(406);
    const introspection = await sameOnBothPaths({ query: '{ __schema { queryType { name } } }' }, false);
    expect(introspection.body.data.__schema.queryType.name).toBe('Query');
  });

  it('answers the first request of a new caller with the caller’s own data', async () => {
    // The compiled document is shared; the context (principal) is each request's own.
    const other = await service.provision({ scopes: ['READ'] });
    const body = JSON.stringify({ query: FEED_DOCUMENT });
    const before = await fastPathCount();
    const response = await service.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${other.key}` },
      body,
    });
    expect(await fastPathCount()).toBe(before + 1);
    expect(JSON.parse(response.text).data.notifications.total).toBe(0);
  });
});
