import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineEvent } from '../events/registry.js';
import { ROLLOUT_POLICIES } from './rollout-policies.js';

// From a merge to a version: a source moved, a build was submitted for the build machine, and the
// build succeeded (a module version, with the bases it was handed) or failed with the recipe's
// own output. `module.rollout-set` says what a new version of a module does to its nodes.

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const commit = z.string().regex(/^[0-9a-f]{7,64}$/, 'a commit is a hexadecimal git object name');

/** Where a module is built from, without path or ref: a repository on a seat (never an address) or an external URL. */
export const sourceRefSchema = z.union([z.strictObject({ seat: z.string().min(1), repository: z.string().min(1) }), z.strictObject({ url: z.string().min(1) })]);
export type SourceRef = z.infer<typeof sourceRefSchema>;

/** A base a build is handed: the `build.on` entry it answers and the artifact digest it stood for. */
export const baseSchema = z.strictObject({ name: z.string().min(1), digest: z.string().regex(DIGEST) });
export type Base = z.infer<typeof baseSchema>;

export { ROLLOUT_POLICIES, type RolloutPolicy } from './rollout-policies.js';

/** The repository and branch a module follows: `mesh-git:mesh/app@main`, `https://…@v2`. */
export const sourceKey = (source: SourceRef, ref: string): string => ('seat' in source ? `${source.seat}:${source.repository}@${ref}` : `${source.url}@${ref}`);

/** source.<hash>: one aggregate per repository and branch; its events say where the branch went. */
export const sourceAggregate = (source: SourceRef, ref: string): string => `source.${createHash('sha256').update(sourceKey(source, ref)).digest('hex').slice(0, 24)}`;

/** build.<module>: every build of a module, submitted and finished. */
export const buildAggregate = (module: string): string => `build.${module}`;

export const SourceMoved = defineEvent({
  type: 'source.moved',
  version: 1,
  schema: z.strictObject({
    source: sourceRefSchema,
    /** the branch that moved */
    ref: z.string().min(1),
    /** the commit it now points at: for a merge, the merge commit */
    commit,
    /** who said so: the mesh-git holder's event (`mesh-git holder <node>/<module>`), or an operator's `module moved` */
    heardFrom: z.string().min(1),
  }),
});

export const BuildSubmitted = defineEvent({
  type: 'build.submitted',
  version: 1,
  schema: z.strictObject({
    buildId: z.string().min(1),
    module: z.string().min(1),
    definitionVersion: z.number().int().positive(),
    commit,
    source: sourceRefSchema,
    path: z.string(),
    recipe: z.string().min(1),
    output: z.string().min(1),
    bases: z.array(baseSchema),
    /** `mesh build --register-only`: the version is recorded and rolls out nowhere, whatever the policy */
    registerOnly: z.boolean(),
    /** why it was submitted, for the log's reader */
    reason: z.string(),
  }),
});

export const BuildSucceeded = defineEvent({
  type: 'build.succeeded',
  version: 1,
  schema: z.strictObject({
    buildId: z.string().min(1),
    module: z.string().min(1),
    commit,
    digest: z.string().regex(DIGEST),
    /** the bases the builder says it was handed: the graph's edges */
    bases: z.array(baseSchema),
    /** the digest differs from the module's newest version: a byte-identical rebuild is not an upgrade */
    upgrade: z.boolean(),
    /** declarations of the nodes running the module now carry this artifact */
    rollOut: z.boolean(),
  }),
});

export const BuildFailed = defineEvent({
  type: 'build.failed',
  version: 1,
  schema: z.strictObject({
    buildId: z.string().min(1),
    module: z.string().min(1),
    commit,
    reason: z.string(),
    /** the end of what the recipe printed */
    output: z.string(),
  }),
});

export const RolloutPolicySet = defineEvent({
  type: 'module.rollout-set',
  version: 1,
  schema: z.strictObject({ module: z.string().min(1), policy: z.enum(ROLLOUT_POLICIES) }),
});

/**
 * An operator keeps the version a module runs although its source moved on or its newest build
 * failed: what the nodes run is intended, until the source moves again or another build fails.
 * Names what it was kept against, so a later move or failure is a problem again.
 */
export const VersionKept = defineEvent({
  type: 'module.version-kept',
  version: 1,
  schema: z.strictObject({
    module: z.string().min(1),
    /** the commit the module's branch pointed at when it was kept; null when no move was heard */
    head: z.string().min(1).nullable(),
    /** the newest build, failed, that it was kept against; null when the newest had not failed */
    failedBuild: z.string().min(1).nullable(),
    reason: z.string().min(1),
  }),
});

/**
 * An operator rolls out a version the mesh built and recorded (`mesh module deploy`, under the
 * `record` policy): the declarations of the nodes running the module now carry its artifact, as a
 * build's roll-out would have put it there.
 */
export const VersionDeployed = defineEvent({
  type: 'module.version-deployed',
  version: 1,
  schema: z.strictObject({
    module: z.string().min(1),
    digest: z.string().regex(DIGEST),
    /** the commit and build that produced it, for the log's reader */
    commit,
    buildId: z.string().min(1),
    /** the artifact the nodes were declared to run before; null when none was deployed */
    replaced: z.string().regex(DIGEST).nullable(),
  }),
});

export const buildEvents = [SourceMoved, BuildSubmitted, BuildSucceeded, BuildFailed, RolloutPolicySet, VersionKept, VersionDeployed] as const;
