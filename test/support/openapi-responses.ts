/**
 * Every response the test suite receives through the harness is checked against the service's own
 * OpenAPI document: a documented route must answer only statuses the document lists, and a JSON
 * body must match that status's schema. A response the document does not describe fails the test
 * that received it, naming the route, the status and what differs.
 *
 * Only documented routes (a path and method of the document) are checked, and only JSON bodies
 * (Server-Sent Events, HTML, CSV and Prometheus text are not JSON Schema's to judge). Validators are
 * compiled once per document, route and status (Ajv 2020 with ajv-formats, as discovery promises).
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

type OpenApiDocument = {
  paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>>;
};

/** One document's checks: its Ajv (the whole document added as a schema, so its `$ref`s resolve) and compiled validators. */
interface DocumentChecks {
  document: OpenApiDocument;
  routes: { method: string; template: string; pattern: RegExp }[];
  ajv: Ajv2020;
  validators: Map<string, ValidateFunction>;
}

const DOCUMENT_ID = 'urn:test:openapi';
/** By document text (servers aside, which name each test service's port): services of a run share one. */
const checksByDocument = new Map<string, DocumentChecks>();

function checksFor(document: OpenApiDocument & { servers?: unknown }): DocumentChecks {
  const { servers: _servers, ...rest } = document;
  const text = JSON.stringify(rest);
  let checks = checksByDocument.get(text);
  if (!checks) {
    // Not strict: the document holds OpenAPI keywords (discriminator, examples maps) beside JSON Schema's.
    const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema({ ...rest, $id: DOCUMENT_ID });
    const routes = Object.entries(document.paths).flatMap(([template, item]) =>
      Object.keys(item).map((method) => ({
        method: method.toUpperCase(),
        template,
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      })),
    );
    checks = { document, routes, ajv, validators: new Map() };
    checksByDocument.set(text, checks);
  }
  return checks;
}

const pointer = (...parts: string[]) => parts.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export interface CheckedResponse {
  method: string;
  url: string;
  status: number;
  contentType: string | null;
  body: unknown;
  text: string;
}

/** What the response breaks of the document, or null when it keeps to it (or the route is not documented). */
export function responseProblem(document: Record<string, any>, response: CheckedResponse): string | null {
  const checks = checksFor(document as OpenApiDocument);
  const path = new URL(response.url).pathname;
  const route = checks.routes.find((candidate) => candidate.method === response.method && candidate.pattern.test(path));
  if (!route) return null;
  const where = `${response.method} ${path} (documented as ${route.template}) answered ${response.status}`;
  const responses = checks.document.paths[route.template][route.method.toLowerCase()].responses ?? {};
  const documented = responses[String(response.status)];
  if (!documented) return `${where}, a status the OpenAPI document does not list (it lists ${Object.keys(responses).join(', ')}).`;
  if (!response.contentType?.startsWith('application/json')) return null;
  if (!documented.content?.['application/json']?.schema)
    return `${where} with a JSON body, which the document does not describe for that status.`;
  if (response.body === undefined)
    return `${where} with a Content-Type of JSON but a body that is not JSON: ${response.text.slice(0, 200)}`;
  const key = `${route.method} ${route.template} ${response.status}`;
  let validate = checks.validators.get(key);
  if (!validate) {
    const ref = `${DOCUMENT_ID}#/${pointer('paths', route.template, route.method.toLowerCase(), 'responses', String(response.status), 'content', 'application/json', 'schema')}`;
    validate = checks.ajv.compile({ $ref: ref });
    checks.validators.set(key, validate);
  }
  if (validate(response.body)) return null;
  const errors = (validate.errors ?? [])
    .slice(0, 5)
    .map((error) => `  body${error.instancePath} ${error.message} ${JSON.stringify(error.params)}`);
  return `${where} with a body that does not match the document's schema:\n${errors.join('\n')}\nbody: ${response.text.slice(0, 500)}`;
}
