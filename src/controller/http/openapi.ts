import { z } from 'zod';
import { consoleChallengeSchema, consoleSessionAnswerSchema, consoleSessionRequestSchema } from '../../domain/operators/console-session.js';
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
      security: [],
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
    ConsoleChallenge: jsonSchema(consoleChallengeSchema),
    ConsoleSessionRequest: jsonSchema(consoleSessionRequestSchema),
    ConsoleSessionAnswer: jsonSchema(consoleSessionAnswerSchema),
  };
  /** A route anyone may ask (console-access.ts): it carries no mesh data. */
  const open = { security: [] };
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
    '/api/session/challenge': {
      get: {
        ...open,
        summary: 'A nonce to sign with an operator key (good once, for a minute), as `mesh console open` does',
        responses: { '200': json(ref('ConsoleChallenge'), 'the nonce'), '503': json(ref('ToolAnswer'), 'too many nonces wait to be signed; Retry-After says when to ask again') },
      },
    },
    '/api/session': {
      post: {
        ...open,
        summary: "A session, for the operator whose signature over the nonce verifies against the key the mesh holds (context 'mesh console session v1')",
        requestBody: { required: true, ...json(ref('ConsoleSessionRequest'), 'the operator, the nonce and the signature') },
        responses: {
          '201': json(ref('ConsoleSessionAnswer'), 'opened: a bearer token, and a one-time address that sets the session cookie'),
          '400': json(ref('ToolAnswer'), 'the body does not fit'),
          '401': json(ref('ToolAnswer'), 'refused: the nonce is unknown, used or expired, the operator unknown or revoked, or the signature does not verify'),
        },
      },
    },
    '/session/{link}': {
      get: {
        ...open,
        summary: 'The one-time address `mesh console open` prints: sets the session cookie (HttpOnly, SameSite=Strict) and leads to the overview',
        parameters: [{ name: 'link', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '303': { description: 'the cookie set; to /' }, '401': { description: 'used already, or expired', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
    '/healthz': { get: { ...open, summary: 'Liveness: the process answers', responses: { '200': json(ref('Liveness'), 'alive') } } },
    '/readyz': {
      get: {
        ...open,
        summary: "Readiness: the controller's view and every projection have caught up with the log",
        responses: { '200': json(ref('Readiness'), 'ready'), '503': json(ref('Readiness'), 'not ready, saying what is not') },
      },
    },
    '/api/openapi.json': { get: { ...open, summary: 'This document', responses: { '200': json({ type: 'object' }, 'the OpenAPI document') } } },
  };
  for (const verb of toolVerbs()) {
    const request = toolRequestSchema(verb);
    if (!request) continue;
    const name = `ToolRequest_${verb.replaceAll('-', '_')}`;
    schemas[name] = jsonSchema(request);
    paths[`/api/tools/${verb}`] = {
      post: {
        // A command is signed by its operator: that, not a session, says who sent it.
        ...open,
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
  return {
    openapi: '3.1.0',
    info: {
      title: "the mesh controller's API",
      version: API_VERSION,
      description:
        'Reads (the pages, /api/*, the fact stream) answer only an operator session (`mesh console open`) whenever the controller listens beyond loopback, and on loopback when MESH_CONSOLE_AUTH=required; on loopback by default they are open, and so is /metrics.',
    },
    // A session as a bearer token or the console's cookie; `{}`: no session, on loopback while MESH_CONSOLE_AUTH is open.
    security: [{ session: [] }, { sessionCookie: [] }, {}],
    paths,
    components: {
      schemas,
      securitySchemes: {
        session: { type: 'http', scheme: 'bearer', description: 'the token `mesh console open --json` prints' },
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'mesh_console_session', description: 'set by the one-time address `mesh console open` prints' },
      },
    },
  };
};
