/**
 * README, Quick start: `GET /` tells a newcomer where to look (the reference page, the OpenAPI
 * document, GraphQL and operation discovery), without a credential; each path it names answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../support/harness.js';

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

describe('GET /', () => {
  it('answers 200 with the paths of the reference, the OpenAPI document, GraphQL and discovery', async () => {
    const index = await service.request('/');
    expect(index.status).toBe(200);
    expect(index.body).toEqual({
      name: expect.any(String),
      docs: '/docs',
      openapi: '/openapi.json',
      graphql: '/graphql',
      operations: '/api/v1/operations',
    });
    for (const path of [index.body.openapi, index.body.operations]) expect((await service.request(path)).status).toBe(200);
  });

  it('answers other methods with 405 and Allow, in the error shape', async () => {
    const post = await service.request('/', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    expect(post.body.error.code).toBe('method_not_allowed');
  });

  it('is documented in the OpenAPI document', async () => {
    const document = (await service.request('/openapi.json')).body;
    expect(document.paths['/'].get.responses['200']).toBeDefined();
  });
});
