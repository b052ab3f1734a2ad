import { z } from 'zod';

// A node's declaration: everything one node must run now, with every requirement filled in.
// State, not an event: only the newest matters (design 32 §4). The control plane publishes it on
// `mesh.node.<node>.declare` (stream NODES, one message per subject); the node agent applies it.
//
// Every field of a resource is part of the declaration's digest, so changing any of them changes
// what the agent compares (issue 126 in the seeds: a changed mount source recreated nothing).

const name = z.string().min(1);

/** Resources are keyed `<module>/<name>`: unique on the node, stable across versions. */
const base = {
  key: z.string().regex(/^[a-z][a-z0-9-]*\/[A-Za-z0-9._-]+$/),
  module: name,
};

export const directoryResource = z.strictObject({
  ...base,
  kind: z.literal('directory'),
  path: z.string().regex(/^\//),
  owner: z.string().nullable(),
  mode: z.string().regex(/^0[0-7]{3}$/),
});

export const fileResource = z.strictObject({
  ...base,
  kind: z.literal('file'),
  path: z.string().regex(/^\//),
  content: z.string(),
  mode: z.string().regex(/^0[0-7]{3}$/),
  /** its module writes the tag of the content it works with to `<path>.in-use`: applied only then (`files[].confirmsUse`) */
  awaitsUse: z.literal(true).optional(),
});

/**
 * A marked region of a file the machine shares (ADR 0102): the agent owns only the lines between
 * `# BEGIN mesh <key>` and `# END mesh <key>` and keeps the rest of the file byte for byte. Only a
 * node that has reported the `region` capability is sent one (capabilities.ts).
 */
export const regionResource = z.strictObject({
  ...base,
  kind: z.literal('region'),
  path: z.string().regex(/^\//),
  content: z.string(),
  at: z.enum(['start', 'end']),
});

/**
 * A unit of the machine's service manager (ADR 0118): `state` null leaves its lifecycle to the
 * machine; `enabled` null leaves its boot setting alone. The agent records the state it first
 * found the unit in and gives it back when undeclared.
 */
export const serviceResource = z.strictObject({
  ...base,
  kind: z.literal('service'),
  unit: z.string().min(1),
  state: z.enum(['running', 'stopped']).nullable(),
  enabled: z.boolean().nullable(),
  /** resource keys whose change reloads it when it runs */
  reloadOn: z.array(z.string()),
});

/**
 * The mesh's root certificate, for the agent to place in the machine's trust directory and refresh
 * its bundles (issue 129). Public material; the agent decides where, the declaration says what.
 */
export const trustAnchorResource = z.strictObject({
  ...base,
  kind: z.literal('trust-anchor'),
  certificate: z.string().min(1),
  fingerprint: z.string().regex(/^sha256:[0-9a-f]{64}$/),
});

/** A secret is named and where it must land is said; its value travels sealed, never here. */
export const secretResource = z.strictObject({
  ...base,
  kind: z.literal('secret'),
  secret: name,
  path: z.string().regex(/^\//),
  /** the user the module's processes run as, who alone may read it (0600); null is the agent's own */
  owner: z.string().nullable(),
  vault: z.strictObject({ node: name, module: name }),
  /**
   * The versions to place: the first at `path`, a second (while a rotation has this node hold both)
   * at `<path>.next`. Absent for a secret never rotated: the vault's current version is placed.
   */
  versions: z.array(z.number().int().positive()).min(1).max(2).optional(),
  /**
   * A provider's copy of a consumer's secret, from a provider that confirms what it holds in force
   * (`provides[].confirmsCredentials`): applied only once `<path>.in-force` names every value placed.
   */
  awaitsInForce: z.literal(true).optional(),
});

/**
 * A module's identity on the bus, in a file of its own for its processes to read (`${bus.credential}`
 * is its path). The agent asks the controller for it, sealed to this node, and writes it (0600)
 * before anything of the module starts; only what is public is declared, never the key.
 */
export const busIdentityResource = z.strictObject({
  ...base,
  kind: z.literal('bus-identity'),
  path: z.string().regex(/^\//),
  /** the user the module's processes run as, who must be able to read it; null is the agent's own */
  owner: z.string().nullable(),
  /** the inbox prefix its connections use */
  inbox: z.string().min(1),
  /** its manifest's consumes: the file carries the subjects they derive, so a change fetches it again */
  consumes: z.array(z.string()),
});

const envFile = z.strictObject({ path: z.string(), reason: z.string() });

export const processResource = z.strictObject({
  ...base,
  kind: z.literal('process'),
  run: z.array(z.string()).min(1),
  user: z.string().nullable(),
  env: z.record(z.string(), z.string()),
  envFiles: z.array(envFile),
  /** resource keys whose change restarts it */
  restartOn: z.array(z.string()),
  /** what must have applied before it starts: its module's bus identity, then its run-once steps (prepare first) */
  after: z.array(z.string()),
});

export const containerResource = z.strictObject({
  ...base,
  kind: z.literal('container'),
  image: z.string().min(1),
  command: z.array(z.string()).nullable(),
  user: z.string().nullable(),
  env: z.record(z.string(), z.string()),
  envFiles: z.array(envFile),
  mounts: z.array(z.strictObject({ source: z.string(), target: z.string(), readOnly: z.boolean() })),
  ports: z.array(z.strictObject({ port: z.number().int(), protocol: z.enum(['tcp', 'udp']) })),
  restartOn: z.array(z.string()),
  after: z.array(z.string()),
});

/**
 * Runs to completion before what it gates. Its record is the digest of this declaration of it,
 * so a changed command, image or input runs it again (ADR 0099). A module's prepare step is one of
 * these, with `prepare: true` and the same image, environment and credentials as what it gates
 * (ADR 0135).
 */
export const runOnceResource = z.strictObject({
  ...base,
  kind: z.literal('run-once'),
  prepare: z.boolean(),
  image: z.string().nullable(),
  command: z.array(z.string()).min(1),
  user: z.string().nullable(),
  env: z.record(z.string(), z.string()),
  envFiles: z.array(envFile),
  mounts: z.array(z.strictObject({ source: z.string(), target: z.string(), readOnly: z.boolean() })),
  /** digests of what it reads: a change runs it again */
  reads: z.array(z.string()),
  after: z.array(z.string()),
});

export const resourceSchema = z.discriminatedUnion('kind', [directoryResource, fileResource, regionResource, serviceResource, trustAnchorResource, secretResource, busIdentityResource, processResource, containerResource, runOnceResource]);

export const declaredAssignment = z.strictObject({
  module: name,
  definitionVersion: z.number().int().positive(),
  /** the artifact the module runs (its version), when it has been built; null for upstream-only modules */
  artifact: z.string().nullable(),
  seats: z.array(name),
  /** in the order they are applied: directories and files, then secrets and the bus identity, run-once steps, then what they gate */
  resources: z.array(resourceSchema),
});

export const declarationSchema = z.strictObject({
  node: name,
  /** grows with every declaration published for this node; a node refuses a lower one */
  sequence: z.number().int().positive(),
  /** sha256 of the canonical content (node and assignments): equal digests, nothing to do */
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  /** the log sequence the declaration was derived at */
  derivedFromSeq: z.number().int().nonnegative(),
  assignments: z.array(declaredAssignment),
});

export type Declaration = z.infer<typeof declarationSchema>;

/**
 * What a publisher and the overview read of a declaration in NODES: its head, checked as the whole
 * schema checks it, the assignments left unread. Parsing every assignment of every node to learn
 * three numbers was most of what `mesh status` spent reading NODES.
 */
export const declarationHeadSchema = z.object(declarationSchema.pick({ node: true, sequence: true, digest: true, derivedFromSeq: true }).shape);
export type DeclaredAssignment = z.infer<typeof declaredAssignment>;
export type Resource = z.infer<typeof resourceSchema>;
export type ResourceKind = Resource['kind'];

/** `mesh.node.<node>.declare`: the subject a node's declaration is kept on. */
export const declarationSubject = (node: string, prefix = 'mesh'): string => `${prefix}.node.${node}.declare`;
