import { z } from 'zod';
import { defineEvent, isRecord } from '../events/registry.js';

// The mesh aggregate: the first entry of every log, so the log says which mesh it is, who started
// it, and which key its writer (the controller) signs every commit with.

export const meshAggregate = (meshName: string): string => `mesh.${meshName}`;

// v2 names the controller's public key; a v1 genesis, from before commits were signed, names none.
export const MeshInitialised = defineEvent({
  type: 'mesh.initialised',
  version: 2,
  schema: z
    .object({
      mesh: z.string().min(1),
      logStream: z.string().min(1),
      /** base64 ed25519 public key every commit of this log is signed with; null before the log was signed */
      controllerKey: z.string().min(1).nullable(),
    })
    .strict(),
  upcasters: { 1: (data) => (isRecord(data) ? { ...data, controllerKey: null } : data) },
});

export const meshEvents = [MeshInitialised] as const;
