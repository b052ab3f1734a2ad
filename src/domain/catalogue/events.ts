import { z } from 'zod';
import { defineEvent } from '../events/registry.js';
import { manifestSchema } from './manifest.js';

// module.<name>: every version of a module's definition. Re-registering is a new version; the log
// keeps them all.

export const moduleAggregate = (module: string): string => `module.${module}`;

export const ModuleRegistered = defineEvent({
  type: 'module.registered',
  version: 1,
  schema: z.strictObject({
    module: z.string().min(1),
    definitionVersion: z.number().int().positive(),
    /** sha256 of the canonical manifest: the same manifest registered again is no new version */
    digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    manifest: manifestSchema,
  }),
});

export const catalogueEvents = [ModuleRegistered] as const;
