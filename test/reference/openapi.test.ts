/**
 * `GET /openapi.json`, `GET /docs` and the discovery schemas, over HTTP: the document is valid
 * OpenAPI 3.1 under a standard validator, says what discovery says (same operations, same
 * schemas), documents every registered route with its errors and headers; every published JSON
 * Schema declares draft 2020-12 and compiles under a default, strict Ajv2020 with ajv-formats.
 */
import { validate } from '@readme/openapi-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { encodeKeysetCursor, KEYSET_CURSOR_PATTERN } from '../../src/common/keyset-page.js';
import { EARLIEST_TIMESTAMP_MS, LATEST_TIMESTAMP_MS } from '../../src/common/timestamp-range.js';
import { registeredRestRoutes } from '../../src/http/rest/rest-route.js';
import { seedDemo } from '../../src/app/demo-seed.js';
import { REST_STATUS } from '../support/contract.js';
import { startService, type TestService } from '../support/harness.js';
import { responseProblem } from '../support/openapi-responses.js';

type Schema = Record<string, any>;
const DIALECT = 'https://json-schema.org/draft/2020-12/schema';

let service: TestService;
let document: Schema;
let operations: Schema[];

beforeAll(async () => {
  service = await startService();
  const [reference, discovery] = await Promise.all([service.request('/openapi.json'), service.request('/api/v1/operations')]);
  expect(reference.status).toBe(200);
  document = reference.body;
  operations = discovery.body.operations;
});
afterAll(() => service?.close());

/** A default Ajv2020 (strict) with ajv-formats; a strict-mode warning fails the compile too. */
function strictCompile(schema: Schema) {
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
  try {
    const ajv = new Ajv2020();
    addFormats.default(ajv);
    const validateFn = ajv.compile(schema);
    expect(warn, JSON.stringify(warn.mock.calls)).not.toHaveBeenCalled();
    return validateFn;
  } finally {
    warn.mockRestore();
  }
}

/** The components a schema refers to, transitively. */
function referenced(schema: unknown, components: Record<string, Schema>, found = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) schema.forEach((item) => referenced(item, components, found));
  else if (schema && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')) {
        const name = value.slice('#/components/schemas/'.length);
        if (!found.has(name)) {
          found.add(name);
          referenced(components[name], components, found);
        }
      } else referenced(value, components, found);
    }
  }
  return found;
}

/** A component of the document as a standalone schema, the way discovery publishes it. */
function standalone(name: string): Schema {
  const components = document.components.schemas as Record<string, Schema>;
  const rewrite = (value: unknown): unknown => JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', '"#/$defs/'));
  const defs = [...referenced(components[name], components)].sort();
  return {
    $schema: DIALECT,
    ...(rewrite(components[name]) as Schema),
    ...(defs.length && { $defs: Object.fromEntries(defs.map((def) => [def, rewrite(components[def])])) }),
  };
}

describe('GET /openapi.json', () => {
  it('is public JSON, valid OpenAPI 3.1 under @readme/openapi-parser', async () => {
    const result = await service.request('/openapi.json');
    expect(result.headers.get('content-type')).toMatch(/^application\/json/);
    expect(result.headers.get('x-request-id')).toBeTruthy();
    expect(result.headers.get('access-control-allow-origin')).toBeNull();
    expect(document.openapi).toMatch(/^3\.1\./);
    expect(document.jsonSchemaDialect).toBe(DIALECT);
    const verdict = await validate(structuredClone(document) as Parameters<typeof validate>[0]);
    expect(verdict.valid ? [] : verdict.errors).toEqual([]);
  });

  it('has one call schema per operationId under a discriminator, with the same variables and result schemas as discovery', () => {
    const call = document.paths['/api/v1/call'].post;
    const body = call.requestBody.content['application/json'].schema;
    expect(body.discriminator.propertyName).toBe('operationId');
    const mapped = Object.keys(body.discriminator.mapping).sort();
    expect(mapped).toEqual(operations.map((op) => op.operationId).sort());
    expect(body.oneOf).toHaveLength(operations.length);
    const responses = call.responses['200'].content['application/json'].schema.anyOf.map((s: Schema) => s.$ref);
    for (const op of operations) {
      const callSchema = document.components.schemas[body.discriminator.mapping[op.operationId].split('/').pop()];
      expect(callSchema.properties.operationId).toEqual({ const: op.operationId });
      expect(standalone(`${op.operationId}Variables`), op.operationId).toEqual(op.variables);
      expect(standalone(`${op.operationId}Result`), op.operationId).toEqual(op.result);
      if (op.type === 'subscription') {
        // A stream: its events are `{"data": <event>}` as the operation's Response component says, sent as text/event-stream.
        expect(call.responses['200'].content['text/event-stream'].schema.description).toContain(`${op.operationId}Response`);
        expect(document.components.schemas[`${op.operationId}Response`].properties.data).toEqual({
          $ref: `#/components/schemas/${op.operationId}Result`,
        });
      } else expect(responses).toContain(`#/components/schemas/${op.operationId}Response`);
      // Every example body is valid against its own call schema.
      const example = call.requestBody.content['application/json'].examples[op.operationId].value;
      expect(strictCompile(standalone(`${op.operationId}Call`))(example), op.operationId).toBe(true);
    }
  });

  it('documents every registered REST route, discovery and health, with bearer schemes per credential kind', () => {
    const paths = Object.keys(document.paths);
    for (const route of registeredRestRoutes(service.app.http)) {
      // Path parameters as OpenAPI writes them: `/jobs/:id` is `/jobs/{id}`.
      const operation = document.paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.path}`).toBeDefined();
      expect(operation.summary).toBe(route.summary);
    }
    expect(paths).toEqual(
      expect.arrayContaining([
        '/api/v1/skiptrace',
        '/api/v1/skiptrace/batch',
        '/api/v1/skiptrace/jobs',
        '/api/v1/skiptrace/jobs/{id}',
        '/api/v1/skiptrace/jobs/{id}/results',
        '/api/v1/skiptrace/jobs/{id}/cancel',
        '/api/v1/operations',
        '/api/v1/operations/{operationId}',
        '/healthz',
        '/readyz',
      ]),
    );
    const schemes = document.components.securitySchemes;
    for (const name of ['gatewayKey', 'skipTraceKey', 'platformToken'])
      expect(schemes[name]).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.paths['/api/v1/call'].post.security).toEqual([{ gatewayKey: [] }]);
    expect(document.paths['/api/v1/skiptrace'].post.security).toEqual([{ skipTraceKey: [] }]);
    expect(document.paths['/api/v1/operations'].get.security).toEqual([]);
  });

  it("lists each route's error statuses with the error body, codes from the error table, and the rate-limit and request-id headers", () => {
    const skipTrace = document.paths['/api/v1/skiptrace'].post.responses;
    expect(Object.keys(skipTrace).sort()).toEqual(['200', '401', '402', '403', '408', '409', '413', '415', '422', '429', '500', '504']);
    const codesOf = (response: Schema) => response.content['application/json'].schema.allOf[1].properties.error.properties.code.enum;
    expect(codesOf(skipTrace['429']).sort()).toEqual(['concurrency_limit', 'rate_limited']);
    expect(skipTrace['429'].headers['Retry-After']).toBeDefined();
    // The gateway's 429 is also a stream past its limits, or a user's marks past the ones waiting on the instance.
    const gateway = document.paths['/api/v1/call'].post.responses;
    expect(codesOf(gateway['429']).sort()).toEqual(['concurrency_limit', 'rate_limited']);
    expect(gateway['429'].headers['Retry-After']).toBeDefined();
    expect(codesOf(skipTrace['409'])).toEqual(['idempotency_key_in_use']);
    expect(codesOf(skipTrace['422'])).toContain('idempotency_key_reused');
    // The billing headers and the idempotency header come from the route's declaration.
    expect(Object.keys(skipTrace['200'].headers)).toEqual(
      expect.arrayContaining(['X-Credits-Remaining', 'X-Cache', 'Idempotent-Replayed']),
    );
    const skipTraceParameters = document.paths['/api/v1/skiptrace'].post.parameters as Schema[];
    expect(skipTraceParameters.find((p) => p.name === 'Idempotency-Key')).toMatchObject({ in: 'header', required: false });
    // The 200 body is the API reference's object: the fields answered as headers are not in it.
    const traceBody = JSON.stringify(skipTrace['200'].content['application/json'].schema);
    for (const field of ['creditsRemaining', 'cacheHit', 'replayed']) expect(traceBody).not.toContain(field);
    // GET routes: query parameters from the operation's variables, no body, no 415.
    const usage = document.paths['/api/v1/skiptrace/usage'].get;
    expect(usage.requestBody).toBeUndefined();
    expect(
      (usage.parameters as Schema[])
        .filter((p) => p.in === 'query')
        .map((p) => p.name)
        .sort(),
    ).toEqual(['cursor', 'from', 'limit', 'to']);
    expect(usage.responses['415']).toBeUndefined();
    expect(document.paths['/api/v1/skiptrace/account'].get.security).toEqual([{ skipTraceKey: [] }]);
    const call = document.paths['/api/v1/call'].post.responses;
    expect(Object.keys(call).sort()).toEqual(['200', '401', '403', '404', '408', '413', '415', '422', '429', '500']);
    expect(codesOf(call['404'])).toEqual(['unknown_operation']);
    for (const [path, item] of Object.entries<Schema>(document.paths))
      for (const [method, operation] of Object.entries<Schema>(item))
        for (const [status, response] of Object.entries<Schema>(operation.responses)) {
          const where = `${method} ${path} ${status}`;
          expect(response.headers?.['X-Request-Id'], where).toBeDefined();
          if (Number(status) >= 400 && response.content?.['application/json']?.schema?.allOf) {
            for (const code of codesOf(response)) expect(REST_STATUS[code], `${where} ${code}`).toBe(Number(status));
          }
        }
    for (const status of ['200', '401', '422', '429']) {
      expect(Object.keys(call[status].headers)).toEqual(
        expect.arrayContaining(['X-Request-Id', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']),
      );
    }
  });
});

describe('GET /openapi.json: skip trace jobs', () => {
  const codesOf = (response: Schema) => response.content['application/json'].schema.allOf[1].properties.error.properties.code.enum;

  it('documents job creation: a JSON or CSV body, webhookUrl, 202 with Location and the job, the 422s and Idempotency-Key', () => {
    const create = document.paths['/api/v1/skiptrace/jobs'].post;
    expect(Object.keys(create.requestBody.content).sort()).toEqual(['application/json', 'text/csv']);
    expect(create.requestBody.content['text/csv'].schema.description).toContain('line1');
    const body = create.requestBody.content['application/json'].schema;
    expect(Object.keys(body.properties).sort()).toEqual(['items', 'webhookUrl']);
    expect(body.required).toEqual(['items']);
    expect(Object.keys(create.responses).sort()).toEqual(['202', '401', '402', '403', '408', '409', '413', '415', '422', '429', '500']);
    expect(Object.keys(create.responses['202'].headers)).toEqual(expect.arrayContaining(['Location', 'Idempotent-Replayed']));
    const accepted = create.responses['202'].content['application/json'].schema;
    expect(Object.keys(accepted.properties).sort()).toEqual(['counts', 'createdAt', 'id', 'status']);
    expect((create.parameters as Schema[]).map((p) => `${p.in} ${p.name}`)).toEqual(
      expect.arrayContaining(['header Idempotency-Key', 'query webhookUrl']),
    );
    expect(codesOf(create.responses['422'])).toEqual(expect.arrayContaining(['invalid_request', 'idempotency_key_reused']));
    expect(
      strictCompile(standaloneOf(body))({ items: [{ key: 'a', address: { line1: '1 A St', city: 'Austin', state: 'TX', zip: '78701' } }] }),
    ).toBe(true);
  });

  it('documents the job, the listing, the results (JSON pages, or CSV by Accept) and cancel, each with its 404', () => {
    const job = document.paths['/api/v1/skiptrace/jobs/{id}'].get;
    expect((job.parameters as Schema[]).find((p) => p.in === 'path')).toMatchObject({ name: 'id', required: true });
    expect(Object.keys(job.responses['200'].content['application/json'].schema.properties).sort()).toEqual([
      'completedAt',
      'counts',
      'createdAt',
      'id',
      'startedAt',
      'status',
      'webhook',
    ]);
    expect(codesOf(job.responses['404'])).toEqual(['not_found']);
    const list = document.paths['/api/v1/skiptrace/jobs'].get;
    expect(
      (list.parameters as Schema[])
        .filter((p) => p.in === 'query')
        .map((p) => p.name)
        .sort(),
    ).toEqual(['cursor', 'limit']);
    expect(Object.keys(list.responses['200'].content['application/json'].schema.properties).sort()).toEqual(['jobs', 'nextCursor']);
    const results = document.paths['/api/v1/skiptrace/jobs/{id}/results'].get;
    expect(Object.keys(results.responses['200'].content).sort()).toEqual(['application/json', 'text/csv']);
    expect(Object.keys(results.responses['200'].content['application/json'].schema.properties).sort()).toEqual(['nextCursor', 'results']);
    expect(results.description).toContain('p1_phone1_type');
    expect(codesOf(results.responses['404'])).toEqual(['not_found']);
    const cancel = document.paths['/api/v1/skiptrace/jobs/{id}/cancel'].post;
    expect(cancel.requestBody).toBeUndefined();
    expect(codesOf(cancel.responses['404'])).toEqual(['not_found']);
    for (const operation of [job, list, results, cancel]) expect(operation.security).toEqual([{ skipTraceKey: [] }]);
  });
});

/** A schema of the document (its `$ref`s to components) as a standalone schema. */
function standaloneOf(schema: Schema): Schema {
  const components = document.components.schemas as Record<string, Schema>;
  const rewrite = (value: unknown): unknown => JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', '"#/$defs/'));
  const defs = [...referenced(schema, components)].sort();
  return {
    $schema: DIALECT,
    ...(rewrite(schema) as Schema),
    ...(defs.length && { $defs: Object.fromEntries(defs.map((def) => [def, rewrite(components[def])])) }),
  };
}

describe('GET /openapi.json: where to send requests, and what each route can answer', () => {
  it("names the service's own origin in servers, from the Host it was reached at; a garbled Host gets a relative server", async () => {
    expect(document.servers).toEqual([{ url: service.baseUrl, description: expect.any(String) }]);
    const port = new URL(service.baseUrl).port;
    const asked = async (host: string) => {
      const { request } = await import('node:http');
      return new Promise<Schema>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/openapi.json', headers: { host } }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve(JSON.parse(text) as Schema));
        });
        req.on('error', reject);
        req.end();
      });
    };
    expect((await asked(`API.Example.com:${port}`)).servers[0].url).toBe(`http://api.example.com:${port}`);
    expect((await asked('[::1]:8080')).servers[0].url).toBe('http://[::1]:8080');
    for (const spoofed of ['evil.com/"><script>', 'a b', 'x@evil.com', 'evil.com:99999999'])
      expect((await asked(spoofed)).servers[0].url, spoofed).toBe('/');
  });

  it('a configured PUBLIC_URL is the server, whatever the Host', async () => {
    const behindProxy = await startService({ PUBLIC_URL: 'https://api.example.com/' });
    try {
      expect((await behindProxy.request('/openapi.json')).body.servers).toEqual([
        { url: 'https://api.example.com', description: expect.any(String) },
      ]);
    } finally {
      await behindProxy.close();
    }
  });

  it("the gateway's 429 allows concurrency_limit (a key's stream past its limit, a user's writes past their queue) with Retry-After", () => {
    const tooMany = document.paths['/api/v1/call'].post.responses['429'];
    expect(tooMany.content['application/json'].schema.allOf[1].properties.error.properties.code.enum.sort()).toEqual([
      'concurrency_limit',
      'rate_limited',
    ]);
    expect(tooMany.headers['Retry-After']).toBeDefined();
  });

  it('the skip trace examples are bodies the service accepts: each traces a demo property and answers 200', async () => {
    const examples = document.paths['/api/v1/skiptrace'].post.requestBody.content['application/json'].examples as Record<string, Schema>;
    expect(Object.keys(examples).length).toBeGreaterThan(0);
    // The data of an embedded first start, which the examples are written for.
    const demo = await seedDemo(service.app.services.orm.em.fork(), service.app.services.config.limits.maxKeysPerUser);
    for (const [name, example] of Object.entries(examples)) {
      const result = await service.request('/api/v1/skiptrace', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${demo.skipTraceKey}` },
        body: JSON.stringify(example.value),
      });
      expect(result.status, `${name}: ${result.text}`).toBe(200);
      expect(result.body.status, name).toBe('records_found');
    }
  });

  it('documents the batch route: its body and 200 schemas, billing and idempotency headers, its statuses; its example is a body the service accepts', async () => {
    const batch = document.paths['/api/v1/skiptrace/batch'].post;
    expect(batch.security).toEqual([{ skipTraceKey: [] }]);
    expect(Object.keys(batch.responses).sort()).toEqual(['200', '401', '402', '403', '408', '409', '413', '415', '422', '429', '500']);
    expect(Object.keys(batch.responses['200'].headers)).toEqual(expect.arrayContaining(['X-Credits-Remaining', 'Idempotent-Replayed']));
    expect((batch.parameters as Schema[]).find((p) => p.name === 'Idempotency-Key')).toMatchObject({ in: 'header', required: false });
    const body = JSON.stringify(batch.requestBody.content['application/json'].schema);
    for (const word of ['"items"', '"maxItems":100', 'SkipTraceItemInput']) expect(body).toContain(word);
    expect(Object.keys(document.components.schemas.SkipTraceItemInput.properties).sort()).toEqual(['actor', 'address', 'key']);
    const answer = JSON.stringify(batch.responses['200'].content['application/json'].schema);
    for (const word of ['"charged"', '"results"', '"records_found"', '"insufficient_credits"']) expect(answer).toContain(word);
    for (const field of ['creditsRemaining', 'replayed']) expect(answer).not.toContain(`"${field}"`);
    const demo = await seedDemo(service.app.services.orm.em.fork(), service.app.services.config.limits.maxKeysPerUser);
    const examples = batch.requestBody.content['application/json'].examples as Record<string, Schema>;
    for (const [name, example] of Object.entries(examples)) {
      const result = await service.request('/api/v1/skiptrace/batch', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${demo.skipTraceKey}` },
        body: JSON.stringify(example.value),
      });
      expect(result.status, `${name}: ${result.text}`).toBe(200);
      expect(
        result.body.results.map((r: Schema) => r.status),
        name,
      ).toEqual(example.value.items.map(() => 'records_found'));
    }
  });

  it("the gateway's examples are calls the service answers with 200, as the page's code samples send them", async () => {
    const examples = document.paths['/api/v1/call'].post.requestBody.content['application/json'].examples as Record<string, Schema>;
    const user = await service.provision({ scopes: ['READ', 'WRITE'] });
    for (const [name, example] of Object.entries(examples)) {
      // A stream answers as it goes; the page shows it the same example, with Accept: text/event-stream.
      if (name === 'watchNotifications') continue;
      const result = await service.call(user.key, example.value);
      expect(result.status, `${name}: ${result.text}`).toBe(200);
    }
  });
});

describe("the harness's check of every response against the document", () => {
  it('names the route, the status and what differs; passes what the document allows; leaves undocumented routes and SSE alone', () => {
    const call = { method: 'POST', url: `${service.baseUrl}/api/v1/call`, contentType: 'application/json', text: '{}' };
    expect(responseProblem(document, { ...call, status: 418, body: {} })).toMatch(
      /^POST \/api\/v1\/call .*answered 418, a status the OpenAPI document does not list \(it lists 200, .*429, 500\)/,
    );
    expect(responseProblem(document, { ...call, status: 429, body: { error: { code: 'teapot', message: 'x' } } })).toMatch(
      /answered 429 with a body that does not match the document's schema:\n {2}body\/error\/code must be equal to one of the allowed values/,
    );
    expect(responseProblem(document, { ...call, status: 429, body: { error: { code: 'concurrency_limit', message: 'x' } } })).toBeNull();
    expect(responseProblem(document, { ...call, status: 200, contentType: 'text/event-stream', body: undefined })).toBeNull();
    expect(responseProblem(document, { ...call, url: `${service.baseUrl}/graphql`, status: 418, body: {} })).toBeNull();
    expect(responseProblem(document, { ...call, status: 200, body: undefined, text: 'not json' })).toMatch(/a body that is not JSON/);
  });
});

describe('the published JSON Schemas', () => {
  it('declare draft 2020-12 and compile with a fresh default Ajv2020 and ajv-formats, discovery and OpenAPI components alike', () => {
    expect(operations.length).toBeGreaterThan(0);
    for (const op of operations) {
      for (const schema of [op.variables, op.result]) {
        expect(schema.$schema, op.operationId).toBe(DIALECT);
        strictCompile(schema);
      }
    }
    for (const name of Object.keys(document.components.schemas)) strictCompile(standalone(name));
  });

  it('state the rules the server enforces: no U+0000 in input strings, limits, and the cursor format', () => {
    const list = operations.find((op) => op.operationId === 'listNotifications')!;
    const variables = strictCompile(list.variables);
    expect(variables({ searchTerm: 'ok' })).toBe(true);
    expect(variables({ searchTerm: 'a\u0000b' })).toBe(false);
    expect(variables({ notificationTypeFilter: '\u0000' })).toBe(false);
    expect(variables({ searchTerm: 'x'.repeat(201) })).toBe(false);
    expect(variables({ limit: 51 })).toBe(false);
    expect(variables({ cursor: 'not-a-cursor' })).toBe(false);
    expect(list.variables.properties.cursor.description).toMatch(/opaque/i);
    const mark = strictCompile(operations.find((op) => op.operationId === 'markNotificationsRead')!.variables);
    expect(mark({ notificationIds: ['a\u0000'], isSeen: true })).toBe(false);
    expect(mark({ notificationIds: Array.from({ length: 501 }, (_, i) => String(i)), isSeen: true })).toBe(false);
  });

  it('admit every cursor the server can issue', () => {
    const pattern = new RegExp(KEYSET_CURSOR_PATTERN, 'u');
    fc.assert(
      fc.property(fc.integer({ min: EARLIEST_TIMESTAMP_MS, max: LATEST_TIMESTAMP_MS }), fc.uuid(), fc.string(), (millis, id, list) =>
        pattern.test(encodeKeysetCursor(list, { createdAt: new Date(millis), id })),
      ),
      {
        numRuns: 2000,
        examples: [
          [EARLIEST_TIMESTAMP_MS, '00000000-0000-4000-8000-000000000000', ''],
          [0, '00000000-0000-4000-8000-000000000000', 'x'],
        ],
      },
    );
  });
});

describe('GET /docs', () => {
  it('serves the reference page and its scripts from this service, with a CSP that forbids other hosts', async () => {
    const page = await service.request('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/https?:|\*/);
    const scripts = [...page.text.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toEqual(['/docs/scalar.js', '/docs/init.js']);
    for (const src of scripts) {
      const script = await service.request(src);
      expect(script.status, src).toBe(200);
      expect(script.headers.get('content-type'), src).toMatch(/^text\/javascript/);
    }
    const bundle = await service.request('/docs/scalar.js');
    expect(bundle.text.length).toBeGreaterThan(1_000_000);
    expect(bundle.text).not.toContain('fonts.scalar.com');
  });

  it('answers 405 to other methods, in the contract shape', async () => {
    for (const path of ['/docs', '/openapi.json']) {
      const result = await service.request(path, { method: 'POST' });
      expect(result.status, path).toBe(405);
      expect(result.body.error.code).toBe('method_not_allowed');
    }
  });
});

describe('GraphiQL', () => {
  it('outside production: a page with no asset from another host, a CSP that keeps it so, and no CORS headers', async () => {
    const result = await service.request('/graphql', { headers: { accept: 'text/html' } });
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toMatch(/^text\/html/);
    expect(result.headers.get('access-control-allow-origin')).toBeNull();
    expect(result.headers.get('content-security-policy')).toContain("connect-src 'self'");
    // No src= or href= to another host (data: and blob: URLs are inline).
    const external = [...result.text.matchAll(/\b(?:src|href)\s*=\s*["'](https?:)?\/\/[^"']+/gi)].map((m) => m[0]);
    expect(external).toEqual([]);
    expect(result.text).not.toMatch(/unpkg\.com|jsdelivr|cdnjs/);
    expect(result.text).toContain('Put your key in the Headers tab below');
  });

  it('JSON callers keep the error shape: no credential is still 401 UNAUTHENTICATED in JSON', async () => {
    const result = await service.request('/graphql?query=%7B__typename%7D', { headers: { accept: 'application/json' } });
    expect(result.status).toBe(401);
    expect(result.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(result.headers.get('content-security-policy')).toBeNull();
  });
});

describe('GraphiQL in production', () => {
  it('is not served: text/html without a credential is 401 in JSON', async () => {
    const production = await startService({ NODE_ENV: 'production' });
    try {
      const result = await production.request('/graphql', { headers: { accept: 'text/html' } });
      expect(result.status).toBe(401);
      expect(result.headers.get('content-type')).toMatch(/^application\/json/);
      expect(result.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    } finally {
      await production.close();
    }
  });
});
