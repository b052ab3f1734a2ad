import { z } from 'zod';
import { defineEvent } from '../events/registry.js';

// The mesh aggregate: the first entry of every log, so the log says which mesh it is and who
// started it.

export const meshAggregate = (meshName: string): string => `mesh.${meshName}`;

export const MeshInitialised = defineEvent({
  type: 'mesh.initialised',
  version: 1,
  schema: z
    .object({
      mesh: z.string().min(1),
      logStream: z.string().min(1),
    })
    .strict(),
});

export const meshEvents = [MeshInitialised] as const;
