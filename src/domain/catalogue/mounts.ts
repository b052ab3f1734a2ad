import type { Problem } from '../refusal.js';
import type { MeshState } from '../mesh/state.js';
import { providersOf, registeredModuleNames } from './state.js';
import { kindOf } from './references.js';

// Where a module's resources put things and what its containers mount, against what the module
// declared. A container mounts only what its module declared — its directories, its files, the
// secrets the mesh places for it — never a host path and never a named volume for data (ADR 0091,
// ADR 0107, R112.9; issue 115 of the seeds lost data to a bare name Docker made a volume of).

type Raw = Record<string, unknown>;
const record = (value: unknown): Raw => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Raw) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

const DIRECTORY_REQUIREMENT = (name: string) => `{ "name": "${name}", "contract": "directory", "provider": "host" }`;

/** Another registered module whose name is a segment of a host path: likely its placed directory. */
const ownerOf = (path: string, own: string, state: MeshState): string | undefined => {
  const segments = new Set(path.split('/'));
  for (const module of registeredModuleNames(state.catalogue)) if (module !== own && segments.has(module)) return module;
  return undefined;
};

export const mountProblems = (raw: Raw, state: MeshState): Problem[] => {
  const own = text(raw.name) ?? '';
  const requirements = new Map(list(raw.requires).flatMap((r) => (text(record(r).name) ? [[text(record(r).name) as string, record(r)] as const] : [])));
  const resources = record(raw.resources);
  const files = new Set(list(resources.files).flatMap((f) => (text(record(f).name) ? [text(record(f).name) as string] : [])));
  const mountable = [...[...requirements].filter(([, r]) => ['directory', 'secret'].includes(kindOf(r))).map(([name]) => name), ...files];
  const choices = mountable.length > 0 ? `mount one it declares (${mountable.join(', ')}), or ` : '';
  const problems: Problem[] = [];

  list(resources.containers).forEach((container, i) => {
    list(record(container).mounts).forEach((mount, j) => {
      const from = text(record(mount).from);
      if (!from) return;
      const what = `resources.containers.${i}.mounts.${j}.from`;
      const requirement = requirements.get(from);
      if (requirement) {
        const kind = kindOf(requirement);
        if (kind !== 'directory' && kind !== 'secret') {
          problems.push({ what, why: `"${from}" is a ${text(requirement.contract)} requirement, which is nothing a container can mount`, remedy: `${choices}declare a directory: ${DIRECTORY_REQUIREMENT(`${from}-data`)}` });
        }
        return;
      }
      if (files.has(from)) return;
      if (from.startsWith('/') || from.startsWith('~') || from.startsWith('.') || from.includes('${')) {
        const other = ownerOf(from, own, state);
        problems.push({
          what,
          why: `"${from}" is a host path${other ? ` (it looks like module ${other}'s directory)` : ''}, and a container mounts only what its module declares: where a directory lands is the node's to decide (ADR 0107, R112.9)`,
          remedy: `${other ? `read ${other}'s data through what ${other} provides; ` : ''}${choices}declare a directory requirement (${DIRECTORY_REQUIREMENT('data')}) and mount it by name; an operator places it with mesh assign --place`,
        });
        return;
      }
      problems.push({
        what,
        why: `"${from}" is neither a requirement nor a file of this module, and Docker would make a bare name a named volume, which docker volume rm or a prune deletes unseen (ADR 0107, issue 115)`,
        remedy: `${choices}declare it: ${DIRECTORY_REQUIREMENT(from)}`,
      });
    });
  });

  // The other places a resource names a requirement: each must be one of the kind it needs.
  const needs = (what: string, name: string | undefined, kind: 'directory' | 'port', example: string): void => {
    if (!name) return;
    const requirement = requirements.get(name);
    if (requirement && kindOf(requirement) === kind) return;
    problems.push({
      what,
      why: requirement ? `"${name}" is a ${text(requirement.contract)} requirement, not a host ${kind}` : `"${name}" is not a requirement of this module`,
      remedy: `name a host ${kind} requirement, e.g. ${example}`,
    });
  };
  // An env-file is read into a process's environment: a file of the module, a secret requirement,
  // or a requirement answered by a provider that makes each consumer a secret.
  const envFileSources = (what: string, entries: unknown): void =>
    list(entries).forEach((entry, i) => {
      const from = text(record(entry).from);
      if (!from || files.has(from)) return;
      const requirement = requirements.get(from);
      const kind = requirement ? kindOf(requirement) : undefined;
      if (kind === 'secret') return;
      if (kind === 'provision') {
        const contract = text(requirement?.contract) ?? '';
        const providers = providersOf(state.catalogue, contract);
        // With no provider registered yet this cannot be judged here: composition holds it until one says.
        if (providers.length === 0 || providers.some((p) => p.manifest.provides.some((provided) => provided.provision === contract && provided.perConsumerSecret))) return;
        problems.push({
          what: `${what}.${i}.from`,
          why: `"${from}" is answered by ${providers.map((p) => p.name).join(', ')}, and no provider of ${contract} makes its consumers a secret to read as an env-file`,
          remedy: 'read what the provider answers through ${…} in env, or name a secret requirement',
        });
        return;
      }
      problems.push({
        what: `${what}.${i}.from`,
        why: requirement ? `"${from}" is a ${text(requirement.contract)} requirement, and an env-file is a file or a secret` : `"${from}" is not a file or requirement of this module`,
        remedy: `name a file of the module or a secret requirement, e.g. { "name": "api-key", "contract": "secret", "provider": "module", "seat": "mesh-vault" }`,
      });
    });
  list(resources.processes).forEach((p, i) => envFileSources(`resources.processes.${i}.envFiles`, record(p).envFiles));
  list(resources.containers).forEach((c, i) => envFileSources(`resources.containers.${i}.envFiles`, record(c).envFiles));
  list(resources.directories).forEach((d, i) => needs(`resources.directories.${i}.requirement`, text(record(d).requirement), 'directory', DIRECTORY_REQUIREMENT('data')));
  list(resources.files).forEach((f, i) => needs(`resources.files.${i}.in`, text(record(f).in), 'directory', DIRECTORY_REQUIREMENT('config')));
  list(resources.containers).forEach((c, i) =>
    list(record(c).ports).forEach((p, j) => needs(`resources.containers.${i}.ports.${j}.requirement`, text(record(p).requirement), 'port', '{ "name": "http-port", "contract": "port", "provider": "host", "port": 8080 }')),
  );
  return problems;
};
