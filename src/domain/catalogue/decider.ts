import { z } from 'zod';
import { sha256Digest } from '../canonical.js';
import type { Decision } from '../decision.js';
import { isRecord } from '../events/registry.js';
import type { MeshState } from '../mesh/state.js';
import { moduleNamed } from './state.js';
import { Refusal, refuseIfAny } from '../refusal.js';
import { registrationProblems, schemaProblems } from './checks.js';
import { ModuleRegistered, moduleAggregate } from './events.js';
import { manifestSchema, type Manifest } from './manifest.js';

export const registerModuleSchema = z.strictObject({
  type: z.literal('register-module'),
  /** the manifest as the operator wrote it; checked by the decider, all at once */
  manifest: z.unknown(),
});
export type RegisterModule = z.infer<typeof registerModuleSchema>;

export const manifestDigest = (manifest: Manifest): string => sha256Digest(manifest);

export const decideRegisterModule = (command: RegisterModule, state: MeshState): Decision => {
  const parsed = manifestSchema.safeParse(command.manifest);
  const problems = [...(parsed.success ? [] : schemaProblems(parsed.error.issues)), ...registrationProblems(command.manifest, state)];
  const name = isRecord(command.manifest) && typeof command.manifest.name === 'string' ? command.manifest.name : '(unnamed)';
  refuseIfAny(`registering module ${name}`, problems);
  if (!parsed.success) throw new Refusal(`registering module ${name}`, schemaProblems(parsed.error.issues));

  const manifest = parsed.data;
  const digest = manifestDigest(manifest);
  const current = moduleNamed(state.catalogue, manifest.name);
  // Against the current definition's manifest as it reads today, not the digest stored with it:
  // that one was computed by the code of its day (an older key order, a field since renamed).
  if (current && manifestDigest(current.manifest) === digest) {
    return { aggregate: moduleAggregate(manifest.name), events: [], summary: `${manifest.name} is already registered with this manifest (definition version ${current.definitionVersion})` };
  }
  const definitionVersion = (current?.definitionVersion ?? 0) + 1;
  return {
    aggregate: moduleAggregate(manifest.name),
    events: [{ type: ModuleRegistered.type, data: { module: manifest.name, definitionVersion, digest, manifest } }],
    summary: `${manifest.name} registered as definition version ${definitionVersion}${pathNotNamed(command.manifest)}${entrypointsNotRun(manifest)}`,
  };
};

/**
 * Issue 132 of the seeds: a source that names a repository and no folder reads exactly like a
 * whole one. It is not refused — a module at a repository's root is ordinary — but said, when the
 * person registering it is the one who knows which it is.
 */
const pathNotNamed = (raw: unknown): string => {
  const source = isRecord(raw) && isRecord(raw.source) ? raw.source : undefined;
  if (!source || typeof source.path === 'string') return '';
  const where = typeof source.repository === 'string' ? `${String(source.seat)}:${source.repository}` : String(source.url);
  return `; its source names no path, so it is built from the root of ${where} — if it lives in a folder of the repository, register it again with --path`;
};

/** The entrypoints no resource runs (issue 117): an argv of a process, container, step or prepare beginning with the entrypoint's command runs it. */
export const entrypointsRunByNothing = (manifest: Manifest): Manifest['entrypoints'] => {
  const { processes, containers, runOnce, prepare } = manifest.resources;
  const argvs = [...processes.map((p) => p.run), ...containers.flatMap((c) => (c.command ? [c.command] : [])), ...runOnce.map((s) => s.command), ...(prepare ? [prepare.command] : [])];
  const runs = (entry: string[], argv: string[]): boolean => entry.every((word, i) => argv[i] === word);
  return manifest.entrypoints.filter((entrypoint) => !argvs.some((argv) => runs(entrypoint.command, argv)));
};

const entrypointsNotRun = (manifest: Manifest): string => {
  const idle = entrypointsRunByNothing(manifest);
  if (idle.length === 0) return '';
  return `; entrypoints no resource runs: ${idle.map((e) => `${e.name} (${e.command.join(' ')})`).join(', ')} — run each from a process, container or step, or take it out of entrypoints`;
};
