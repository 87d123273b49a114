import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { allowOnly } from '../../infra/http/server.js';
import { selfOnlyContentSecurityPolicy } from '../../infra/http/content-security-policy.js';
import type { DocumentedRoute } from './documented-route.js';
import { buildOpenApiDocument, type OpenApiSources } from './openapi.js';

/**
 * Scalar's standalone bundle (one self-contained script), served from node_modules by this
 * service. Its package does not export the file, so it is found beside the package's entry point.
 */
const SCALAR_BUNDLE = join(dirname(createRequire(import.meta.url).resolve('@scalar/api-reference')), 'browser', 'standalone.js');
/**
 * The bundle embeds `@font-face` rules that fetch its fonts from Scalar's host whatever the
 * configuration says (`withDefaultFonts: false` does not stop them): they are cut, so the page
 * uses the system's fonts and loads nothing from another host.
 */
const FOREIGN_FONT_FACE = /@font-face \{[^}]*?https?:\/\/[^}]*?\}/g;
let scalarBundle: Promise<string> | undefined;
const loadScalarBundle = () => (scalarBundle ??= readFile(SCALAR_BUNDLE, 'utf8').then((text) => text.replace(FOREIGN_FONT_FACE, '')));

/** The page and its two scripts are files of this service (no inline script); nothing else may load. */
const DOCS_CONTENT_SECURITY_POLICY = selfOnlyContentSecurityPolicy();

const DOCS_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>CRM developer API reference</title>
    <link rel="icon" href="data:," />
  </head>
  <body>
    <div id="api-reference"></div>
    <script src="/docs/scalar.js"></script>
    <script src="/docs/init.js"></script>
  </body>
</html>
`;

// Fonts, telemetry and Scalar's hosted services (its AI agent, MCP) off: everything comes from this service.
const DOCS_INIT = `Scalar.createApiReference('#api-reference', ${JSON.stringify({
  url: '/openapi.json',
  withDefaultFonts: false,
  telemetry: false,
  showDeveloperTools: 'never',
  agent: { disabled: true },
  mcp: { disabled: true },
  documentDownloadType: 'json',
})});
`;

const ASSET_MAX_AGE = 'public, max-age=3600';

/** The reference's own routes, as it documents them. */
export const referenceRoutesReference: readonly DocumentedRoute[] = [
  {
    method: 'GET',
    path: '/openapi.json',
    summary: 'This document: OpenAPI 3.1, generated from the route declarations and the GraphQL schema. Public.',
    tag: 'Service',
    responses: { 200: { description: 'The OpenAPI document.', schema: { type: 'object' } } },
  },
  {
    method: 'GET',
    path: '/docs',
    summary: 'The API reference page, rendered from /openapi.json with assets served by this service. Public.',
    tag: 'Service',
    responses: { 200: { description: 'An HTML page.', mediaType: 'text/html', schema: { type: 'string' } } },
  },
];

/**
 * `GET /openapi.json` and `GET /docs` (with its two scripts), public like discovery. The document
 * is built once, when the app is ready, from every route registered by then (Fastify answers no
 * request before its ready hooks have run).
 */
export function registerReferenceRoutes(app: FastifyInstance, sources: () => OpenApiSources) {
  let document: string | undefined;
  app.addHook('onReady', async () => {
    document = JSON.stringify(buildOpenApiDocument(sources()));
  });
  app.get('/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(document));
  app.get('/docs', async (_request, reply) =>
    reply.type('text/html; charset=utf-8').header('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY).send(DOCS_PAGE),
  );
  app.get('/docs/scalar.js', async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('Cache-Control', ASSET_MAX_AGE)
      .send(await loadScalarBundle()),
  );
  app.get('/docs/init.js', async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('Cache-Control', ASSET_MAX_AGE).send(DOCS_INIT),
  );
  for (const path of ['/openapi.json', '/docs', '/docs/scalar.js', '/docs/init.js']) allowOnly(app, path, ['GET']);
}
