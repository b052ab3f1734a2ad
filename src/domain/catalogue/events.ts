import { z } from 'zod';
import { defineEvent, isRecord } from '../events/registry.js';
import { manifestSchema } from './manifest.js';

// module.<name>: every version of a module's definition. Re-registering is a new version; the log
// keeps them all.

export const moduleAggregate = (module: string): string => `module.${module}`;

// v1 stored manifests as they were written then, when the tools a module serves were listed under
// `serves` (design 32 §1 renamed it `tools`); v2 stores `tools`. Reading v1 moves `serves` into
// `tools`, so a definition registered before the rename keeps composing with no hand step.
const toolsWereServes = (data: unknown): unknown => {
  if (!isRecord(data) || !isRecord(data.manifest)) return data;
  const { serves, ...rest } = data.manifest;
  if (!Array.isArray(serves)) return data;
  const tools: unknown[] = [...new Set([...(Array.isArray(rest.tools) ? rest.tools : []), ...serves])];
  return { ...data, manifest: { ...rest, tools } };
};

export const ModuleRegistered = defineEvent({
  type: 'module.registered',
  version: 2,
  upcasters: { 1: toolsWereServes },
  schema: z.strictObject({
    module: z.string().min(1),
    definitionVersion: z.number().int().positive(),
    /** sha256 of the canonical manifest: the same manifest registered again is no new version */
    digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    manifest: manifestSchema,
  }),
});

export const catalogueEvents = [ModuleRegistered] as const;
