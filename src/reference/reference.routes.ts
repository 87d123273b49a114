import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { allowOnly } from '../http/server.js';
import { selfOnlyContentSecurityPolicy } from '../http/content-security-policy.js';
import type { DocumentedRoute } from '../http/documented-route.js';
import { buildOpenApiDocument, type OpenApiSources } from './openapi.js';

/** The package does not export the file, so it is found beside the entry point. */
const SCALAR_BUNDLE = join(dirname(createRequire(import.meta.url).resolve('@scalar/api-reference')), 'browser', 'standalone.js');
/** Cut: these rules fetch fonts from Scalar's host whatever the options say. */
const FOREIGN_FONT_FACE = /@font-face \{[^}]*?https?:\/\/[^}]*?\}/g;
let scalarBundle: Promise<string> | undefined;
const loadScalarBundle = () => (scalarBundle ??= readFile(SCALAR_BUNDLE, 'utf8').then((text) => text.replace(FOREIGN_FONT_FACE, '')));

/** The page and its scripts are this service's files (no inline script), so nothing else need load. */
const DOCS_CONTENT_SECURITY_POLICY = selfOnlyContentSecurityPolicy();

const DOCS_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>CRM developer API reference</title>
    <link rel="icon" href="data:," />
    <!-- The document downloads while the reference's script is parsed, which it then reads from the cache. -->
    <link rel="preload" href="/openapi.json" as="fetch" crossorigin="anonymous" />
  </head>
  <body>
    <div id="reference"></div>
    <script src="/docs/scalar.js"></script>
    <script src="/docs/init.js"></script>
  </body>
</html>
`;

/**
 * Hosted services off, so the page works from this service alone. Not `#api-reference`: the bundle
 * mounts a second, unconfigured reference on that id by itself.
 */
const DOCS_INIT = `Scalar.createApiReference('#reference', ${JSON.stringify({
  url: '/openapi.json',
  withDefaultFonts: false,
  telemetry: false,
  showDeveloperTools: 'never',
  hideClientButton: true,
  agent: { disabled: true },
  mcp: { disabled: true },
  documentDownloadType: 'json',
  customCss: 'a[href^="https://www.scalar.com"] { display: none !important; }',
})});
`;

const ASSET_MAX_AGE = 'public, max-age=3600';

export const referenceRoutesReference: readonly DocumentedRoute[] = [
  {
    method: 'GET',
    path: '/openapi.json',
    summary: 'This document: OpenAPI 3.1, generated from the route declarations and the GraphQL schema. Public.',
    description: '`servers` names the origin the document was fetched from, or `PUBLIC_URL` when the service is configured with one.',
    tag: 'Service',
    responses: { 200: { description: 'The OpenAPI document.', schema: { type: 'object' } } },
  },
  {
    method: 'GET',
    path: '/docs',
    summary: 'The API reference page, rendered from /openapi.json with assets served by this service. Public.',
    description: 'Works offline: its scripts come from this service and it loads nothing from another host.',
    tag: 'Service',
    responses: { 200: { description: 'An HTML page.', mediaType: 'text/html', schema: { type: 'string' } } },
  },
];

/** A DNS name or IP literal, and a port: anything else is never echoed into `servers`. */
const PLAIN_HOST =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]{2,45}\])(?::\d{1,5})?$/i;

/** The caller's origin, so code samples name the host; a Host that is not plain gets a relative server. */
function serverOf(request: FastifyRequest, publicUrl: string | undefined) {
  if (publicUrl) return { url: publicUrl, description: 'This service.' };
  const host = request.host;
  if (host.length <= 260 && PLAIN_HOST.test(host))
    return { url: `${request.protocol}://${host.toLowerCase()}`, description: 'This service.' };
  return { url: '/', description: 'This service (the origin this document was fetched from).' };
}

/** Public. The document is built once; only `servers` is written per request. */
export function registerReferenceRoutes(app: FastifyInstance, sources: () => OpenApiSources, publicUrl: string | undefined) {
  let document: ((servers: object[]) => string) | undefined;
  // Built at the first request, not at start-up: every route is registered by then.
  const withServers = (servers: object[]) => {
    if (!document) {
      const { openapi, ...rest } = buildOpenApiDocument(sources());
      // `servers` is spliced in after `openapi`, where OpenAPI puts it.
      const head = `{"openapi":${JSON.stringify(openapi)},"servers":`;
      const tail = `,${JSON.stringify(rest).slice(1)}`;
      document = (inner) => head + JSON.stringify(inner) + tail;
    }
    return document(servers);
  };
  app.get('/openapi.json', async (request, reply) =>
    reply.type('application/json; charset=utf-8').send(withServers([serverOf(request, publicUrl)])),
  );
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
