import { z } from 'zod';
import { meshCommandSchema } from '../../domain/mesh/commands.js';
import { signedCommandSchema } from '../../domain/operators/signed-command.js';
import { OPERATOR_COMMANDS } from '../command-dispatcher.js';

// The HTTP API's bodies, from the same zod schemas the tools and the dispatcher read: a tool call's
// body is a signed command whose `command` is the verb's own command schema. The same schemas
// validate a request and make the OpenAPI document (openapi.ts), so the two cannot disagree.

const commandSchemas = new Map<string, (typeof meshCommandSchema.options)[number]>(meshCommandSchema.options.map((schema) => [schema.shape.type.value, schema]));

/** The verbs the API takes, in the dispatcher's order. */
export const toolVerbs = (): string[] => [...OPERATOR_COMMANDS].filter((verb) => commandSchemas.has(verb));

/** The body `POST /api/tools/<verb>` takes: a signed command of that verb; undefined for a verb there is not. */
export const toolRequestSchema = (verb: string) => {
  const command = OPERATOR_COMMANDS.has(verb) ? commandSchemas.get(verb) : undefined;
  return command ? signedCommandSchema.extend({ command }) : undefined;
};

export const problemSchema = z.object({ what: z.string(), why: z.string(), remedy: z.string() });

export const toolAnswerSchema = z.union([
  z.object({ ok: z.literal(true), summary: z.string(), seq: z.number().int(), duplicate: z.boolean(), events: z.array(z.unknown()) }),
  z.object({
    ok: z.literal(false),
    /** every problem at once */
    refused: z.array(problemSchema),
    /** `code` is the stable error code (validation, refused, concurrency, not_found, unavailable, internal); `field` names the field of a bad body */
    error: z.looseObject({ code: z.string(), field: z.string().optional() }),
  }),
]);

export const readinessSchema = z.object({ ready: z.boolean(), notReady: z.array(z.string()) });

export const livenessSchema = z.object({ ok: z.literal(true) });

/** A body that does not fit, as the tools answer it: every field that does not, and why; `field` the first. */
export const badBody = (verb: string, issues: readonly z.core.$ZodIssue[]) => {
  const fields = issues.map((issue) => ({ field: issue.path.map(String).join('.') || 'body', why: issue.message }));
  return {
    ok: false as const,
    refused: fields.map((f) => ({ what: f.field, why: f.why, remedy: `send the body /api/openapi.json gives for ${verb}` })),
    error: { code: 'validation', field: fields[0]?.field ?? 'body', fields },
  };
};
