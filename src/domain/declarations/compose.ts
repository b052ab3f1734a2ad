import type { Resolution } from '../assignments/events.js';
import { resolveRequirements } from '../assignments/resolve.js';
import { moduleInbox } from '../bus/subjects.js';
import { sha256Digest } from '../canonical.js';
import type { Manifest } from '../catalogue/manifest.js';
import { assignmentOf, assignmentsOn, type AssignmentState } from '../assignments/state.js';
import { knownContractField } from '../catalogue/contracts.js';
import { manifestOf, moduleNamed } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { nodeNamed } from '../nodes/state.js';
import { heldBy, seatById } from '../seats/state.js';
import type { Problem } from '../refusal.js';
import type { DeclaredAssignment, Resource } from './declaration.js';
import { deployedDigestOf } from '../builds/state.js';
import { statedCapabilities } from '../facts/state.js';
import { needsCapability } from './capabilities.js';
import { currentGrantsOf, proxyHolder } from '../routes/grants.js';
import { answerFor } from '../answers/state.js';
import { derivedLogin } from '../answers/login.js';
import { proxyResources, publicUrl } from '../routes/table.js';
import { secretsAppliedBy } from '../secrets/wanted.js';
import { declaredVersions, secretNamed } from '../secrets/state.js';
import { currentTrustRoot } from '../trust/state.js';
import { expandRoster, rosterOf, type Roster } from './roster.js';

// What one node must run now, composed from the mesh as the log says it is. Requirements are
// resolved here, at composition (design 27), against the assignments and holders of this moment,
// so a provider that has gone makes the declaration uncomposable instead of stale. Secrets are
// named with where they land; their values never pass through here.

export interface ComposedDeclaration {
  node: string;
  assignments: DeclaredAssignment[];
  /** digest of { node, assignments }: what the agent compares */
  digest: string;
}

export type Composition = { ok: true; declaration: ComposedDeclaration } | { ok: false; node: string; problems: Problem[] };

/** Where the mesh keeps a module's secrets on a node: plumbing, not a module-visible choice. */
const secretPath = (root: string, module: string, requirement: string): string => `${root}/.mesh/${module}/secrets/${requirement}`;

/** Where a provider finds the secret it makes for a consumer (`<node>-<module>`), to apply it. */
export const consumerSecretPath = (root: string, module: string, consumer: string): string => `${root}/.mesh/${module}/consumers/${consumer}`;

/** The folder of a provider's consumer secrets, beside the folder of its own (`${superuser.path}` → `.mesh/<module>/consumers`). */
export const consumerSecretsFolderBeside = (ownSecretPath: string): string => `${ownSecretPath.replace(/\/secrets\/[^/]+$/, '')}/consumers`;

/** Where a module's identity on the bus lands on its node; `${bus.credential}` is this path. */
export const busIdentityPath = (root: string, module: string): string => `${root}/.mesh/${module}/bus-identity.json`;

interface Answers {
  /** `${name}` and `${name.field}` that the controller can fill in */
  values: Map<string, string>;
  /** requirement → the host path it stands for (directories, secrets) */
  paths: Map<string, string>;
  secrets: Map<string, Extract<Resolution['answer'], { kind: 'secret' }> & { requirement: string }>;
  /** `${name.field}` of a provider that has not answered it: why, for the hold that names it */
  unanswered: Map<string, string>;
}

/**
 * A provider's answers to a consumer: its `answers` templates, filled with its own requirements.
 * A template it cannot fill is no answer: the consumer's reference to it waits, named.
 */
const providerAnswers = (
  state: MeshState,
  provider: { node: string; module: string },
  contract: string,
  consumer: { node: string; module: string },
): { answered: Map<string, string>; unanswered: Map<string, string> } => {
  const answered = new Map<string, string>();
  const unanswered = new Map<string, string>();
  const assignment = assignmentOf(state.assignments, provider);
  const manifest = manifestOf(state.catalogue, provider.module);
  const templates = manifest?.provides.find((p) => p.provision === contract)?.answers;
  if (!assignment || !manifest || !templates) return { answered, unanswered };
  const input = { ...assignment, values: Object.fromEntries(Object.entries(assignment.values).map(([name, value]) => [name, String(value)])) };
  const { resolutions } = resolveRequirements(state, input, manifest.requires);
  const own = answersOf(state, nodeNamed(state.nodes, provider.node)?.root ?? '/var/lib/mesh', provider.module, resolutions, false);
  // Who is asking: a provider that makes something per consumer names it by the consumer's identity.
  own.values.set('consumer.name', `${consumer.node}-${consumer.module}`).set('consumer.node', consumer.node).set('consumer.module', consumer.module).set('consumer.login', derivedLogin(consumer.node, consumer.module));
  // Which of its per-consumer secret's values the consumer holds: filled on the consumer's node, in a file, from the value placed there.
  if (manifest.provides.some((p) => p.provision === contract && p.perConsumerSecret)) own.values.set('consumer.secret-tag', `\${secret-tag:${contract}/${consumer.node}-${consumer.module}}`);
  const noSecrets = (): undefined => undefined;
  for (const [field, template] of Object.entries(templates)) {
    const missing: string[] = [];
    const value = fill(template, own, noSecrets, (whole) => missing.push(whole));
    if (missing.length === 0) answered.set(field, value);
    else unanswered.set(field, `its answer ${template} cannot fill ${missing.join(', ')} yet`);
  }
  return { answered, unanswered };
};

const answersOf = (state: MeshState, root: string, module: string, resolutions: Resolution[], withProviders = true, node = ''): Answers => {
  const values = new Map<string, string>();
  const paths = new Map<string, string>();
  const secrets: Answers['secrets'] = new Map();
  const unanswered = new Map<string, string>();
  for (const { requirement, answer } of resolutions) {
    switch (answer.kind) {
      case 'directory':
        values.set(requirement, answer.path).set(`${requirement}.path`, answer.path);
        paths.set(requirement, answer.path);
        break;
      case 'port':
        values.set(requirement, String(answer.port)).set(`${requirement}.port`, String(answer.port));
        break;
      case 'value':
        values.set(requirement, String(answer.value));
        break;
      case 'identity':
        values
          .set(`${requirement}.name`, answer.name)
          .set(`${requirement}.node`, answer.node)
          .set(`${requirement}.module`, answer.module)
          .set(`${requirement}.address`, nodeNamed(state.nodes, answer.node)?.address ?? answer.node);
        break;
      case 'fact':
        break;
      case 'assignment': {
        values.set(`${requirement}.node`, answer.node).set(`${requirement}.address`, nodeNamed(state.nodes, answer.node)?.address ?? answer.node);
        const contract = resolutions.find((r) => r.requirement === requirement)?.contract ?? '';
        if (withProviders) {
          const provider = providerAnswers(state, answer, contract, { node, module });
          for (const [field, value] of provider.answered) values.set(`${requirement}.${field}`, value);
          for (const [field, why] of provider.unanswered) unanswered.set(`${requirement}.${field}`, why);
        }
        break;
      }
      case 'secret': {
        const path = secretPath(root, module, requirement);
        secrets.set(requirement, { ...answer, requirement });
        paths.set(requirement, path);
        values.set(`${requirement}.path`, path);
        break;
      }
    }
  }
  // The bus's credential is the module's own identity, which the mesh places, whatever the broker answers.
  for (const { requirement, contract } of resolutions) if (contract === 'mesh-bus') values.set(`${requirement}.credential`, busIdentityPath(root, module));
  // A provider's per-consumer secret is named `<requirement>-secret`: `${db.password}` reads it.
  return { values, paths, secrets, unanswered };
};

const REFERENCE = /\$\{([a-z][a-z0-9-]*)(?:\.([A-Za-z0-9_-]+))?\}/g;
const ROUTE_REFERENCE_ANYWHERE = /\$\{route:([a-z0-9-]+)\}/g;
const BOUND_REFERENCE_ANYWHERE = /\$\{bound:([a-z][a-z0-9-]*)\.([A-Za-z0-9_-]+)\}/g;

/**
 * Fills `${requirement}` / `${requirement.field}`. A secret stays a marker naming the secret, for
 * the agent to fill from what the vault sealed to it. A reference with no answer (a provider's
 * field it has not answered) is never sent as text: it is handed to `unfilled`, and the
 * composition that meets one holds, naming it. `inside` maps a reference to the path a container
 * sees it at, for the host paths it mounts.
 */
const fill = (
  text: string,
  answers: Pick<Answers, 'values'>,
  secretFields: (requirement: string, field: string | undefined) => string | undefined,
  unfilled: (whole: string, requirement: string, field: string | undefined) => void,
  inside: ReadonlyMap<string, string> = new Map(),
): string =>
  text.replace(REFERENCE, (whole, requirement: string, field: string | undefined) => {
    const secret = secretFields(requirement, field);
    if (secret) return `\${secret:${secret}}`;
    const name = field ? `${requirement}.${field}` : requirement;
    const known = inside.get(name) ?? answers.values.get(name);
    if (known === undefined) unfilled(whole, requirement, field);
    return known ?? whole;
  });

const composeAssignment = (state: MeshState, assignment: AssignmentState, manifest: Manifest, resolutions: Resolution[], held: Problem[]): DeclaredAssignment => {
  const module = assignment.module;
  const root = nodeNamed(state.nodes, assignment.node)?.root ?? '/var/lib/mesh';
  const answers = answersOf(state, root, module, resolutions, true, assignment.node);
  const secretName = (requirement: string, field: string | undefined): string | undefined => {
    const direct = answers.secrets.get(requirement);
    if (direct && (field === undefined || field === 'value')) return direct.name;
    const perConsumer = answers.secrets.get(`${requirement}-secret`);
    const contract = manifest.requires.find((r) => r.name === requirement)?.contract;
    if (perConsumer && field && contract && isSecretField(state, contract, field)) return perConsumer.name;
    return undefined;
  };
  const unfilled = (where: string) => (whole: string, requirement: string, field: string | undefined): void => {
    if (held.some((p) => p.what === where && p.why.startsWith(whole))) return;
    const answer = resolutions.find((r) => r.requirement === requirement);
    const provider = answer?.answer.kind === 'assignment' ? `${answer.answer.node}/${answer.answer.module}` : undefined;
    const pending = field ? answers.unanswered.get(`${requirement}.${field}`) : undefined;
    held.push({
      what: where,
      why: provider && field ? `${whole} waits for ${provider}, the provider of ${answer?.contract}, to answer ${field}${pending ? `: ${pending}` : ': it declares no answer for it'}` : `${whole} has no answer to fill it with`,
      remedy: provider && field ? `it is filled once ${provider} answers ${field} (its provides[].answers); or read a field it answers` : 'reference what the module requires (docs/manifest.md, "References")',
    });
  };
  // issue 122: `${route:NAME}` is the public URL the proxy handed back for the module's own route on this node.
  const grants = currentGrantsOf(state, assignment);
  const routeUrls = new Map((manifest.routes ?? []).flatMap((route) => {
    const grant = grants.get(route.name);
    return grant ? [[route.name, publicUrl(grant.publicName, route.location)] as const] : [];
  }));
  const routesFilled = (where: string) => (text: string): string =>
    text.replace(ROUTE_REFERENCE_ANYWHERE, (whole, name: string) => {
      const url = routeUrls.get(name);
      if (url === undefined && !held.some((p) => p.what === where && p.why.startsWith(whole))) held.push(routeWait(state, assignment, where, whole, name));
      return url ?? whole;
    });
  // issue 124: `${bound:REQ.FIELD}` is what the provider answering REQ derived for this consumer and
  // answered; until it has, the declaration waits, naming what for — never an empty value.
  const boundFilled = (where: string) => (text: string): string =>
    text.replace(BOUND_REFERENCE_ANYWHERE, (whole, requirement: string, field: string) => {
      const answer = resolutions.find((r) => r.requirement === requirement)?.answer;
      const provider = answer?.kind === 'assignment' ? answer : undefined;
      const value = provider ? answerFor(state.answers, assignment, requirement, provider)?.values[field] : undefined;
      if (value === undefined && !held.some((p) => p.what === where && p.why.startsWith(whole))) {
        held.push({
          what: where,
          why: provider ? `${whole} waits for ${provider.node}/${provider.module} to answer ${field} for ${assignment.node}/${module}` : `${whole} waits for a provider of ${requirement}`,
          remedy: provider ? `it is filled once ${provider.node}/${provider.module} answers (answer-consumer ${assignment.node}/${module} ${requirement} ${field}=…)` : `assign a provider of ${requirement}`,
        });
      }
      return value ?? whole;
    });
  // A provider's `${consumer.secret-tag}` is filled by the agent, from the secret it placed, in a file's template alone.
  const tagOutsideFile = (where: string) => (text: string): string => {
    if (text.includes('${secret-tag:') && !where.startsWith('resources.files.') && !held.some((p) => p.what === where)) {
      held.push({ what: where, why: 'it reads which credential the module holds (a provider answered with ${consumer.secret-tag}), which only a file the agent writes can say', remedy: "read that field in a file's template (resources.files) and have the process read the file" });
    }
    return text;
  };
  const fillerAt = (where: string, inside?: ReadonlyMap<string, string>) => (text: string): string => tagOutsideFile(where)(fill(boundFilled(where)(routesFilled(where)(text)), answers, secretName, unfilled(where), inside));
  const fillAllAt = (where: string, record: Record<string, string>, inside?: ReadonlyMap<string, string>): Record<string, string> =>
    Object.fromEntries(Object.entries(record).map(([variable, value]) => [variable, fillerAt(`${where}.${variable}`, inside)(value)]));
  // Inside a container, a host path it mounts reads as where it is mounted (R112.9).
  const insideOf = (mounts: { from: string; to: string }[]): Map<string, string> =>
    new Map(mounts.flatMap((m) => (answers.paths.has(m.from) ? [[m.from, m.to], [`${m.from}.path`, m.to]] : [])));
  const key = (name: string): string => `${module}/${name}`;
  const files = new Map(manifest.resources.files.map((f) => [f.name, `${answers.paths.get(f.in) ?? `${root}/${module}/${f.in}`}/${f.as}`]));
  const mountSource = (from: string): string => answers.paths.get(from) ?? files.get(from) ?? from;
  // An env-file is a file of this module, a secret the mesh places for it, or the secret a
  // provider makes for this consumer (`<requirement>-secret`); anything else holds the declaration
  // rather than hand the process a path that is not there.
  const envFiles = (where: string, entries: { from: string; reason: string }[]) =>
    entries.map((e, i) => {
      const path = answers.paths.get(e.from) ?? files.get(e.from) ?? answers.paths.get(`${e.from}-secret`);
      if (path === undefined) {
        held.push({
          what: `${where}.envFiles.${i}.from`,
          why: `"${e.from}" is no file, secret or per-consumer secret of this module here: its provider makes no secret for it`,
          remedy: `name a file or secret requirement of the module, or a requirement whose provider gives each consumer a secret (provides[].perConsumerSecret)`,
        });
      }
      return { path: path ?? e.from, reason: e.reason };
    });
  const restartKeys = (names: string[]) => [...new Set([...names.map((n) => (files.has(n) ? key(n) : answers.secrets.has(n) ? key(`secret-${n}`) : key(n))), ...rotatedSecrets])];
  // The module's own artifact is the version its rollout put on its nodes (src/domain/builds).
  const artifact = deployedDigestOf(state.builds, module);
  const image = (spec: Manifest['resources']['containers'][number]['image']): string =>
    'upstream' in spec ? spec.upstream : `artifact-store://${module}@${artifact ?? `unbuilt-definition-${assignment.definitionVersion}`}`;

  const resources: Resource[] = [];
  const busIdentity = busIdentityOf(manifest, root, assignment);
  for (const directory of manifest.resources.directories) {
    const requirement = manifest.requires.find((r) => r.name === directory.requirement);
    resources.push({ key: key(directory.requirement), module, kind: 'directory', path: answers.paths.get(directory.requirement) ?? `${root}/${module}/${directory.requirement}`, owner: requirement?.owner ?? null, mode: requirement?.mode ?? '0750' });
  }
  // ADR 0120: a file or region may repeat a line over the mesh's machines or the names it serves.
  let roster: Roster | undefined;
  const withRoster = (template: string): string => (template.includes('${each:') ? expandRoster(template, (roster ??= rosterOf(state))) : template);
  for (const file of manifest.resources.files) {
    resources.push({ key: key(file.name), module, kind: 'file', path: files.get(file.name) ?? '', content: fillerAt(`resources.files.${file.name}.template`)(withRoster(file.template)), mode: file.mode, ...(file.confirmsUse ? { awaitsUse: true as const } : {}) });
  }
  for (const region of manifest.resources.regions) {
    resources.push({ key: key(region.name), module, kind: 'region', path: region.file, content: fillerAt(`resources.regions.${region.name}.template`)(withRoster(region.template)), at: region.at });
  }
  for (const anchor of manifest.resources.trustAnchors) {
    const root = currentTrustRoot(state.trust);
    if (root) resources.push({ key: key(anchor.name), module, kind: 'trust-anchor', certificate: root.certificate, fingerprint: root.fingerprint });
    else held.push({ what: `resources.trustAnchors.${anchor.name}`, why: 'the mesh has no root certificate to trust yet', remedy: 'set it: mesh trust root CERTIFICATE.pem (the root of the authority that issues the mesh\'s certificates)' });
  }
  // After the files and regions they reload on, so a pass writes the setting before it reloads.
  for (const service of manifest.resources.services) {
    resources.push({ key: key(service.name), module, kind: 'service', unit: service.unit, state: service.state ?? null, enabled: service.enabled ?? null, reloadOn: service.reloadOn.map(key) });
  }
  const secretOwner = readerOf(manifest);
  const party = { node: assignment.node, module };
  // A secret that has been rotated is one its readers restart on (derived, not declared): a new
  // value in the file is of no use to a process that read the old one when it started.
  const rotatedSecrets: string[] = [];
  for (const secret of answers.secrets.values()) {
    const versions = declaredVersions(secretNamed(state.secrets, secret.name), party);
    if (versions) rotatedSecrets.push(key(`secret-${secret.requirement}`));
    resources.push({ key: key(`secret-${secret.requirement}`), module, kind: 'secret', secret: secret.name, path: answers.paths.get(secret.requirement) ?? '', owner: secretOwner, vault: secret.holder, ...(versions ? { versions } : {}) });
  }
  // A provider that makes each consumer a secret applies it (creates the login): the vault delivers it here too (ADR 0113).
  for (const applied of secretsAppliedBy(state, assignment)) {
    const consumer = `${applied.consumer.node}-${applied.consumer.module}`;
    const versions = declaredVersions(secretNamed(state.secrets, applied.secret), party);
    const confirms = manifest.provides.some((p) => p.provision === applied.contract && p.confirmsCredentials);
    resources.push({ key: key(`consumer-${consumer}`), module, kind: 'secret', secret: applied.secret, path: consumerSecretPath(root, module, consumer), owner: secretOwner, vault: applied.holder, ...(versions ? { versions } : {}), ...(confirms ? { awaitsInForce: true as const } : {}) });
  }
  if (busIdentity) resources.push(busIdentity);

  // Nothing of a module that reads its bus identity starts before it is there, and a change of it
  // (its consumes) starts what reads it again.
  // Nor before the secrets it reads are placed (its own, not its consumers': a provider runs
  // before any consumer is assigned): a prepare step that initialises with one must find it there.
  const ownSecrets = [...answers.secrets.values()].map((secret) => key(`secret-${secret.requirement}`));
  const gates: string[] = [...(busIdentity ? [busIdentity.key] : []), ...ownSecrets];
  const withIdentity = (keys: string[]): string[] => (busIdentity ? [...keys, busIdentity.key] : keys);
  const gated = manifest.resources.prepare ? new Set(manifest.resources.prepare.gates) : new Set<string>();
  const firstGated = manifest.resources.containers.find((c) => gated.has(c.name)) ?? manifest.resources.processes.find((p) => gated.has(p.name));
  if (manifest.resources.prepare) {
    // ADR 0135: the same image, environment and credentials as what it gates.
    const container = firstGated && 'image' in firstGated ? firstGated : undefined;
    resources.push({
      key: key('prepare'),
      module,
      kind: 'run-once',
      prepare: true,
      image: container ? image(container.image) : null,
      command: manifest.resources.prepare.command.map(fillerAt('resources.prepare.command', container ? insideOf(container.mounts) : undefined)),
      user: firstGated?.user ?? null,
      env: fillAllAt('resources.prepare.env', firstGated?.env ?? {}, container ? insideOf(container.mounts) : undefined),
      envFiles: envFiles('resources.prepare', firstGated?.envFiles ?? []),
      mounts: (container?.mounts ?? []).map((m) => ({ source: mountSource(m.from), target: m.to, readOnly: m.readOnly })),
      reads: [],
      after: [...gates],
    });
    gates.push(key('prepare'));
  }
  for (const step of manifest.resources.runOnce) {
    resources.push({
      key: key(step.name),
      module,
      kind: 'run-once',
      prepare: false,
      image: image(step.image),
      command: step.command.map(fillerAt(`resources.runOnce.${step.name}.command`)),
      user: null,
      env: {},
      envFiles: [],
      mounts: [],
      reads: step.reads.map((name) => sha256Digest(resolutions.find((r) => r.requirement === name) ?? name)),
      after: [...gates],
    });
    gates.push(key(step.name));
  }
  for (const process of manifest.resources.processes) {
    resources.push({ key: key(process.name), module, kind: 'process', run: process.run.map(fillerAt(`resources.processes.${process.name}.run`)), user: process.user ?? null, env: fillAllAt(`resources.processes.${process.name}.env`, process.env), envFiles: envFiles(`resources.processes.${process.name}`, process.envFiles), restartOn: withIdentity(restartKeys(process.restartOn)), after: [...gates] });
  }
  for (const container of manifest.resources.containers) {
    resources.push({
      key: key(container.name),
      module,
      kind: 'container',
      image: image(container.image),
      command: container.command?.map(fillerAt(`resources.containers.${container.name}.command`, insideOf(container.mounts))) ?? null,
      user: container.user ?? null,
      env: fillAllAt(`resources.containers.${container.name}.env`, container.env, insideOf(container.mounts)),
      envFiles: envFiles(`resources.containers.${container.name}`, container.envFiles),
      mounts: container.mounts.map((m) => ({ source: mountSource(m.from), target: m.to, readOnly: m.readOnly })),
      ports: container.ports.map((p) => ({ port: Number(answers.values.get(p.requirement) ?? 0), protocol: p.protocol })),
      restartOn: withIdentity(restartKeys(container.restartOn)),
      after: [...gates],
    });
  }

  const seats = heldBy(state.seats, assignment)
    .map((holding) => seatById(state.seats, holding.seat)?.name ?? holding.seat)
    .sort();
  return { module, definitionVersion: moduleNamed(state.catalogue, module)?.definitionVersion ?? assignment.definitionVersion, artifact, seats, resources };
};

/**
 * A module's identity on the bus is placed on its node when its manifest reads it (`${bus.credential}`
 * of a mesh-bus requirement): a module that never names its credential could not find the file,
 * and a key nobody reads is one more secret on a disk. Its user on the server exists either way.
 */
/** The one user a module's processes and containers run as, who alone may read its secrets; null (the agent's own) when they do not agree on one. */
const readerOf = (manifest: Manifest): string | null => {
  const users = new Set([...manifest.resources.processes, ...manifest.resources.containers].map((p) => p.user ?? null));
  const [owner = null] = users.size === 1 ? users : [];
  return owner;
};

const busIdentityOf = (manifest: Manifest, root: string, assignment: AssignmentState): Extract<Resource, { kind: 'bus-identity' }> | undefined => {
  const declared = JSON.stringify(manifest.resources);
  const reads = manifest.requires.some((r) => r.contract === 'mesh-bus' && declared.includes(`\${${r.name}.credential}`));
  if (!reads) return undefined;
  // Readable by the user its processes run as, when they agree on one; else the agent's own.
  const users = new Set(manifest.resources.processes.map((p) => p.user ?? null));
  const [owner = null] = users.size === 1 ? users : [];
  const { module, node } = assignment;
  return { key: `${module}/bus-identity`, module, kind: 'bus-identity', path: busIdentityPath(root, module), owner, inbox: moduleInbox(module, node), consumes: [...manifest.consumes] };
};

/** Whether a provider's field is a secret: as the contract says (built in, or as its providers declare it); a field no contract names is one by its name. */
const isSecretField = (state: MeshState, contract: string, field: string): boolean => knownContractField(state, contract, field)?.secret ?? (field === 'password' || field === 'credential');

/**
 * The digest an agent compares: over the whole content, every field of every resource, so no
 * change can hide from it (issue 126 in the seeds).
 */
export const declarationDigest = (content: { node: string; assignments: DeclaredAssignment[] }): string => sha256Digest({ node: content.node, assignments: content.assignments });

/**
 * The resources of kinds the node's agent has not said it applies: the declaration is withheld,
 * each named, rather than sent to a host that would refuse the whole of it (capabilities.ts).
 */
const unsupported = (state: MeshState, node: string, assignment: DeclaredAssignment): Problem[] => {
  const reported = new Set(statedCapabilities(state.facts, node));
  return assignment.resources
    .filter((r) => needsCapability(r.kind) && !reported.has(r.kind))
    .map((r) => ({
      what: r.key,
      why: `node ${node}'s agent has not reported the capability "${r.kind}": a host that does not apply ${r.kind} resources would refuse the whole declaration`,
      remedy: `run an agent on ${node} that applies ${r.kind} resources (it says so in its heartbeat); the declaration is sent once it has`,
    }));
};

/** What a `${route:NAME}` with no public name yet waits on: the domain, or the holder of mesh-proxy handing it back. */
const routeWait = (state: MeshState, assignment: AssignmentState, where: string, whole: string, name: string): Problem => {
  const domain = nodeNamed(state.nodes, assignment.node)?.publicDomain;
  const proxy = proxyHolder(state);
  if (domain === undefined) return { what: where, why: `${whole} has no public name: node ${assignment.node} has no public domain`, remedy: `mesh node domain ${assignment.node} DOMAIN` };
  if (!proxy) return { what: where, why: `${whole} waits for a public name, and nobody holds mesh-proxy to hand it back`, remedy: 'assign a proxy: mesh assign route-proxy NODE --hold mesh-proxy' };
  return {
    what: where,
    why: `${whole} waits for ${proxy.node}/${proxy.module}, the holder of mesh-proxy, to hand back the public name of route ${name} (asked: ${name}.${domain})`,
    remedy: `it is filled once the proxy answers (answer-consumer ${assignment.node}/${assignment.module} route:${name} publicName=…, on its bus tool); the routes file on ${proxy.node} lists what it is asked`,
  };
};

/** Composes one node's declaration, or says every requirement that cannot be resolved now. */
export const composeDeclaration = (state: MeshState, node: string): Composition => {
  const assignments = assignmentsOn(state.assignments, node).sort((a, b) => (a.module < b.module ? -1 : 1));
  const declared: DeclaredAssignment[] = [];
  const problems: Problem[] = [];
  for (const assignment of assignments) {
    const module = moduleNamed(state.catalogue, assignment.module);
    if (!module) {
      problems.push({ what: `${node}/${assignment.module}`, why: `module ${assignment.module} is no longer in the catalogue`, remedy: 'register it again or unassign it' });
      continue;
    }
    const input = { ...assignment, values: Object.fromEntries(Object.entries(assignment.values).map(([name, value]) => [name, String(value)])) };
    const { resolutions, problems: unresolved } = resolveRequirements(state, input, module.manifest.requires);
    problems.push(...unresolved.map((p) => ({ ...p, what: `${node}/${assignment.module} ${p.what}` })));
    if (unresolved.length > 0) continue;
    const held: Problem[] = [];
    const composed = composeAssignment(state, assignment, module.manifest, resolutions, held);
    // A kind the node's agent has not said it applies withholds it too.
    held.push(...unsupported(state, node, composed));
    // A reference with no answer yet holds the node's declaration, named, as an unresolved requirement does.
    problems.push(...held.map((p) => ({ ...p, what: `${node}/${assignment.module} ${p.what}` })));
    if (held.length > 0) continue;
    // The holder of mesh-proxy is told every route of the mesh, in the routes file (ADR 0108).
    const proxy = proxyHolder(state);
    if (proxy?.node === node && proxy.module === assignment.module) composed.resources.push(...proxyResources(state, { root: nodeNamed(state.nodes, node)?.root ?? '/var/lib/mesh', module: assignment.module, owner: readerOf(module.manifest) }));
    declared.push(composed);
  }
  if (problems.length > 0) return { ok: false, node, problems };
  return { ok: true, declaration: { node, assignments: declared, digest: declarationDigest({ node, assignments: declared }) } };
};
