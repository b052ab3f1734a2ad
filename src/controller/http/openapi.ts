import { z } from 'zod';
import { livenessSchema, readinessSchema, toolAnswerSchema, toolRequestSchema, toolVerbs } from './api-schemas.js';

// The HTTP API as an OpenAPI 3.1 document, generated from the zod schemas that validate it
// (api-schemas.ts) with zod's own `z.toJSONSchema`: OpenAPI 3.1's schemas are JSON Schema 2020-12,
// which is what it emits, so no converter library stands between the schemas and the document.

type JsonSchema = Record<string, unknown>;

/** A schema as a component: JSON Schema 2020-12, as the request is read (defaults optional). */
const jsonSchema = (schema: z.ZodType): JsonSchema => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return rest;
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object, description: string) => ({ description, content: { 'application/json': { schema } } });

const html = (description: string) => ({ description, content: { 'text/html': { schema: { type: 'string' } } } });
const named = (what: string) => [{ name: 'name', in: 'path', required: true, description: `the ${what}'s name`, schema: { type: 'string' } }];

/** The console's pages (console/routes.tsx): HTML for a person, each read-only. */
const consolePaths = (): Record<string, object> => ({
  '/': { get: { summary: "The console's overview: the verdict, nodes, what is not known, holds, seats, facts", responses: { '200': html('the page') } } },
  '/nodes/{name}': { get: { summary: 'A node: what it runs, holds and why, its declaration, facts and history', parameters: named('node'), responses: { '200': html('the page'), '404': html('no such node') } } },
  '/modules/{name}': { get: { summary: 'A module: its definition, where it runs, its versions and graph edges, its history', parameters: named('module'), responses: { '200': html('the page'), '404': html('no such module') } } },
  '/seats/{name}': { get: { summary: 'A seat: its holder and every holding and handover', parameters: named('seat'), responses: { '200': html('the page'), '404': html('no such seat') } } },
  '/catalogue': { get: { summary: 'Every registered module', responses: { '200': html('the page') } } },
  '/projections': { get: { summary: "Each projection's checkpoint and lag", responses: { '200': html('the page') } } },
  '/log': {
    get: {
      summary: 'The log, with the filters of `mesh log`',
      parameters: ['since', 'aggregate', 'type', 'actor', 'correlation', 'after', 'before'].map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } })),
      responses: { '200': html('the page'), '400': html('a filter `mesh log` would refuse, named') },
    },
  },
  '/assets/{file}': {
    get: {
      summary: "The console's stylesheet, icon and scripts (htmx, served from the installed package)",
      parameters: [{ name: 'file', in: 'path', required: true, schema: { type: 'string' } }],
      responses: { '200': { description: 'the file', content: { 'text/css': { schema: { type: 'string' } }, 'text/javascript': { schema: { type: 'string' } }, 'image/svg+xml': { schema: { type: 'string' } } } }, '404': { description: 'no such asset' } },
    },
  },
});

/** The API's version: moved when a route or a body changes so that an old client breaks. */
export const API_VERSION = '1';

export const openApiDocument = () => {
  const schemas: Record<string, JsonSchema> = {
    ToolAnswer: jsonSchema(toolAnswerSchema),
    Readiness: jsonSchema(readinessSchema),
    Liveness: jsonSchema(livenessSchema),
  };
  const paths: Record<string, object> = {
    ...consolePaths(),
    '/api/overview': {
      get: { summary: 'The overview the page shows: the verdict, problems, nodes, seats, projections and the latest facts', responses: { '200': json({ type: 'object' }, 'the overview') } },
    },
    '/api/facts/stream': {
      get: { summary: 'Facts as they are stated, as server-sent events (`event: fact`)', responses: { '200': { description: 'an event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } } } },
    },
    '/metrics': {
      get: { summary: "The control plane's metrics, Prometheus text format", responses: { '200': { description: 'metrics', content: { 'text/plain': { schema: { type: 'string' } } } } } },
    },
    '/healthz': { get: { summary: 'Liveness: the process answers', responses: { '200': json(ref('Liveness'), 'alive') } } },
    '/readyz': {
      get: {
        summary: "Readiness: the controller's view and every projection have caught up with the log",
        responses: { '200': json(ref('Readiness'), 'ready'), '503': json(ref('Readiness'), 'not ready, saying what is not') },
      },
    },
    '/api/openapi.json': { get: { summary: 'This document', responses: { '200': json({ type: 'object' }, 'the OpenAPI document') } } },
  };
  for (const verb of toolVerbs()) {
    const request = toolRequestSchema(verb);
    if (!request) continue;
    const name = `ToolRequest_${verb.replaceAll('-', '_')}`;
    schemas[name] = jsonSchema(request);
    paths[`/api/tools/${verb}`] = {
      post: {
        operationId: `tool_${verb.replaceAll('-', '_')}`,
        summary: `The ${verb} command, signed by an operator (as \`mesh\` signs it); decided as the ${verb} tool decides it`,
        requestBody: { required: true, ...json(ref(name), `a signed ${verb} command`) },
        responses: {
          '200': json(ref('ToolAnswer'), 'carried out (or carried out before, with the same command id)'),
          '400': json(ref('ToolAnswer'), 'the body does not fit: every field that does not, `error.field` the first'),
          '404': json(ref('ToolAnswer'), 'nothing of that name'),
          '409': json(ref('ToolAnswer'), 'refused, or a conflict: every reason'),
          '503': json(ref('ToolAnswer'), 'a server the mesh needs cannot be reached'),
          '500': json(ref('ToolAnswer'), 'failed; the controller logs why'),
        },
      },
    };
  }
  return { openapi: '3.1.0', info: { title: "the mesh controller's API", version: API_VERSION }, paths, components: { schemas } };
};
