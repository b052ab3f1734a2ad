import { z } from 'zod';
import { routeSchema } from '../routes/contribution.js';

// What a module declares (docs/manifest.md describes every field with an example). A manifest
// names no node, no mesh and no host path (ADR 0112): everything it needs is a requirement.
// Unknown fields are refused outright (design 26), so every object here is strict.

const NAME = /^[a-z][a-z0-9-]*$/;
const name = (what: string) => z.string().regex(NAME, `${what} is lower-case letters, digits and '-', starting with a letter`);

/** A local event or verb name: dot-separated words, e.g. `repository.pushed`, `send`. */
const LOCAL_NAME = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/;
export const localName = z.string().min(1);

export const PROVIDER_KINDS = ['module', 'host', 'mesh', 'operator'] as const;
export const SCOPES = ['mesh', 'node'] as const;

const duration = z.string().regex(/^\d+[smhd]$/, 'a duration is a number and a unit: 30s, 15m, 12h, 7d');

export const sourceSchema = z.union([
  z.strictObject({
    seat: z.string().min(1).describe('the seat whose holder hosts the repository, normally mesh-git'),
    repository: z.string().regex(/^[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+$/, 'a repository on the seat is owner/name'),
    path: z.string().default('.'),
    ref: z.string().min(1).default('main'),
  }),
  z.strictObject({
    url: z.string().min(1),
    path: z.string().default('.'),
    ref: z.string().min(1).default('main'),
  }),
]);

const contractField = z.strictObject({
  type: z.enum(['string', 'number', 'boolean', 'port', 'path', 'url']),
  secret: z.boolean().default(false),
});

export const provisionSchema = z.strictObject({
  provision: name('a provision'),
  /** The contract's fields: what a consumer may read. The first module to declare a contract defines it. */
  fields: z.record(z.string(), contractField).optional(),
  /** "For each consumer, one secret": resolution adds a `secret` requirement named for the consumer. */
  perConsumerSecret: z.boolean().default(false),
  /**
   * "two-credentials": it takes a second credential for one consumer beside the first, so the mesh
   * may rotate a consumer's secret without a moment when neither works (docs/decisions.md, "Rotating
   * a secret"). Absent, its per-consumer secrets are refused rotation.
   */
  rotation: z.enum(['two-credentials']).optional(),
  /**
   * It says which of a consumer's credentials it holds in force, by writing their tags beside them
   * (`<consumer>.in-force`, docs/decisions.md): its node calls its copy applied only then, so a
   * rotation hands readers a new value only once it authenticates here.
   */
  confirmsCredentials: z.literal(true).optional(),
  /**
   * How this provider answers a consumer's non-secret fields, written with its own requirements:
   * `{ "url": "http://${identity.address}:${port}" }`. Filled in when a consumer's declaration is composed.
   */
  answers: z.record(z.string(), z.string()).optional(),
});

export const requirementSchema = z.strictObject({
  name: name('a requirement name'),
  /** The contract: a provision name (module), directory/port/fact (host), identity/names (mesh), value (operator). */
  contract: z.string().min(1),
  provider: z.enum(PROVIDER_KINDS, { error: 'a provider kind is one of module, host, mesh, operator (ADR 0112)' }),
  seat: z.string().min(1).optional(),
  /** operator values: their type and default */
  type: z.enum(['string', 'number', 'boolean', 'port']).optional(),
  default: z.union([z.string(), z.number(), z.boolean()]).optional(),
  secret: z.boolean().optional(),
  /** host directories: owner and mode; no persistence flag (ADR 0107, 0112) */
  owner: z.string().optional(),
  mode: z.string().regex(/^0[0-7]{3}$/, 'a mode is octal, e.g. 0750').optional(),
  /** host ports: the port the software listens on inside */
  port: z.number().int().min(1).max(65535).optional(),
});

export const acceptSchema = z.strictObject({ verb: localName, retain: duration.default('7d') });

export const seatDeclarationSchema = z.strictObject({
  name: name('a seat name'),
  scope: z.enum(SCOPES),
  accepts: z.array(acceptSchema).default([]),
  emits: z.array(localName).default([]),
  serves: z.array(localName).default([]),
});

export const seatClaimSchema = z.union([
  z.string().min(1),
  z.strictObject({ seat: z.string().min(1), scope: z.enum(SCOPES).optional() }),
]);

const mountSchema = z.strictObject({
  /** `requirement` names a host directory requirement (or a `file` resource); never a host path. */
  from: z.string().min(1),
  to: z.string().regex(/^\//, 'a mount target is an absolute path inside the container'),
  readOnly: z.boolean().default(false),
});

const envFileSchema = z.strictObject({ from: z.string().min(1), reason: z.string().min(1) });

const imageSchema = z.union([
  z.strictObject({ built: z.literal(true) }),
  z.strictObject({ upstream: z.string().min(1) }),
]);

const portSchema = z.strictObject({ requirement: z.string().min(1), protocol: z.enum(['tcp', 'udp']).default('tcp') });

export const containerSchema = z.strictObject({
  name: name('a container name'),
  image: imageSchema,
  command: z.array(z.string()).optional(),
  user: z.string().optional(),
  env: z.record(z.string(), z.string()).default({}),
  envFiles: z.array(envFileSchema).default([]),
  mounts: z.array(mountSchema).default([]),
  ports: z.array(portSchema).default([]),
  restartOn: z.array(z.string()).default([]),
});

export const processSchema = z.strictObject({
  name: name('a process name'),
  run: z.array(z.string()).min(1),
  user: z.string().optional(),
  env: z.record(z.string(), z.string()).default({}),
  envFiles: z.array(envFileSchema).default([]),
  restartOn: z.array(z.string()).default([]),
  reloadOn: z.array(z.string()).default([]),
});

export const directoryResourceSchema = z.strictObject({ requirement: z.string().min(1) });

export const fileResourceSchema = z.strictObject({
  name: name('a file name'),
  /** where it lands: a host directory requirement and a name inside it */
  in: z.string().min(1),
  as: z.string().min(1),
  template: z.string(),
  mode: z.string().regex(/^0[0-7]{3}$/).default('0640'),
  /**
   * Its module says once it works with what the file says (a credential it logged in with): it
   * writes the tag of the file's content to `<file>.in-use`, and the module counts as running only
   * then — so a rotation's reader confirms by authenticating, not merely by starting.
   */
  confirmsUse: z.literal(true).optional(),
});

export const runOnceSchema = z.strictObject({
  name: name('a step name'),
  image: imageSchema,
  command: z.array(z.string()).min(1),
  /** what it reads: it runs again when any of these change (ADR 0099) */
  reads: z.array(z.string()).default([]),
});

/**
 * ADR 0102, issue 128: a file the machine shares with software the mesh did not install
 * (`/etc/hosts`) is written into, never over: the module owns only the lines between its markers.
 * The file is the machine's, so it is named by its path there (as ADR 120's facts name theirs).
 */
export const regionSchema = z.strictObject({
  name: name('a region name'),
  file: z.string().regex(/^\/[^\0]*[^/]$/, 'a shared file is an absolute path on the machine, e.g. /etc/hosts'),
  template: z.string(),
  /** where a new region goes; one already present is never moved (ADR 117 R117.4: start, for a file read top-down) */
  at: z.enum(['start', 'end']).default('end'),
});

/**
 * A unit of the machine's service manager the module acts on (ADR 0118, issue 130): started or
 * stopped, enabled or not, reloaded when what it reads changes. With no `state` the unit's
 * lifecycle is the machine's: the mesh never starts or stops it, only reloads it when running
 * (ADR 117, R117.1). Undeclared, it is given back the state it was first found in.
 */
export const serviceSchema = z.strictObject({
  name: name('a service name'),
  unit: z.string().regex(/^[A-Za-z0-9@._:-]+$/, 'a unit is a name the service manager knows, e.g. docker.service'),
  state: z.enum(['running', 'stopped']).optional(),
  enabled: z.boolean().optional(),
  /** resources of this module (files, regions) whose change reloads it, never restarts it (R117.5) */
  reloadOn: z.array(z.string()).default([]),
});

/**
 * Issue 129 of the seeds: the mesh's root certificate placed where the machine's TLS clients look.
 * The module that makes a machine one of the private network declares it, so exactly those
 * machines trust the mesh's authority; what it carries is the root the operator set (`mesh trust
 * root`), never a value of the manifest.
 */
export const trustAnchorSchema = z.strictObject({ name: name('a trust anchor name') });

/** ADR 0135: one entrypoint that prepares the module's state before what it gates starts. */
export const prepareSchema = z.strictObject({
  command: z.array(z.string()).min(1),
  gates: z.array(z.string()).min(1),
});

export const resourcesSchema = z.strictObject({
  containers: z.array(containerSchema).default([]),
  processes: z.array(processSchema).default([]),
  directories: z.array(directoryResourceSchema).default([]),
  files: z.array(fileResourceSchema).default([]),
  runOnce: z.array(runOnceSchema).default([]),
  regions: z.array(regionSchema).default([]),
  services: z.array(serviceSchema).default([]),
  trustAnchors: z.array(trustAnchorSchema).default([]),
  prepare: prepareSchema.optional(),
});

/**
 * Issue 117 of the seeds: the commands the module's code offers (its tools, its provisioner, a
 * scheduled ingest…), each an argv. A resource runs one when its own argv begins with it; one that
 * no resource runs is listed when the module registers, so a second runtime nobody starts — or a
 * process nobody wrote down — is seen where the manifest is.
 */
export const entrypointSchema = z.strictObject({
  name: name('an entrypoint name'),
  command: z.array(z.string().min(1)).min(1),
});

export const buildSchema = z.strictObject({
  /** the command the builder runs in the checkout; what it leaves in `output` is the artifact */
  recipe: z.string().min(1),
  output: z.string().default('out'),
  /** artifacts this module's image is built on; there is no default base */
  on: z.array(z.string().min(1)).default([]),
});

export const manifestSchema = z.strictObject({
  name: name('a module name'),
  description: z.string().optional(),
  source: sourceSchema.optional(),
  provides: z.array(provisionSchema).default([]),
  requires: z.array(requirementSchema).default([]),
  seats: z.array(seatDeclarationSchema).default([]),
  canHold: z.array(seatClaimSchema).default([]),
  emits: z.array(localName).default([]),
  consumes: z.array(localName).default([]),
  tools: z.array(localName).default([]),
  uses: z.array(z.string().min(1)).default([]),
  /** routes the module contributes, each with its policy (ADR 0007, 0108); absent is none */
  routes: z.array(routeSchema).optional(),
  entrypoints: z.array(entrypointSchema).default([]),
  resources: resourcesSchema.default({ containers: [], processes: [], directories: [], files: [], runOnce: [], regions: [], services: [], trustAnchors: [] }),
  build: buildSchema.optional(),
});

export type Manifest = z.infer<typeof manifestSchema>;
export type Requirement = z.infer<typeof requirementSchema>;
export type SeatDeclaration = z.infer<typeof seatDeclarationSchema>;
export type Provision = z.infer<typeof provisionSchema>;
export type ModuleSource = z.infer<typeof sourceSchema>;

export const isLocalName = (value: string): boolean => LOCAL_NAME.test(value);
