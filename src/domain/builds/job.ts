import { z } from 'zod';
import { baseSchema, sourceRefSchema } from './events.js';

// The contract between the control plane and the build machine: a job on
// `mesh.seat.mesh-build-machine.accept.build`, and the outcome the holder states on
// `mesh.seat.mesh-build-machine.event.built|failed`. The builder builds what it is handed and
// never resolves anything: the commit, the recipe and the bases' digests are all in the job.

export const buildJobSchema = z.strictObject({
  buildId: z.string().min(1),
  module: z.string().min(1),
  commit: z.string().min(1),
  /** a repository on a seat is cloned from where that seat's holder runs at the moment of building */
  source: sourceRefSchema,
  path: z.string(),
  /** the branch or tag the module follows, for a failure to say where it looked; absent from jobs queued before it was handed */
  ref: z.string().min(1).optional(),
  recipe: z.string().min(1),
  output: z.string().min(1),
  bases: z.array(baseSchema),
});
export type BuildJob = z.infer<typeof buildJobSchema>;

export const buildOutcomeSchema = z.discriminatedUnion('outcome', [
  z.strictObject({ outcome: z.literal('built'), buildId: z.string(), module: z.string(), commit: z.string(), digest: z.string(), bases: z.array(baseSchema), builder: z.string() }),
  /** a failure names no version: it produced none */
  z.strictObject({ outcome: z.literal('failed'), buildId: z.string(), module: z.string(), commit: z.string(), reason: z.string(), output: z.string(), builder: z.string() }),
]);
export type BuildOutcome = z.infer<typeof buildOutcomeSchema>;

/** What the mesh-git holder says when a branch moved (`pushed`, `pull.merged`). */
export const branchMovedSchema = z.object({
  repository: z.string().min(1),
  branch: z.string().min(1).optional(),
  ref: z.string().min(1).optional(),
  commit: z.string().regex(/^[0-9a-f]{7,64}$/),
});
