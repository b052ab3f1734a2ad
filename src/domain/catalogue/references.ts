import type { Problem } from '../refusal.js';
import type { MeshState } from '../mesh/state.js';
import { knownContractField, knownContractFields } from './contracts.js';
import { rosterBlocks } from '../declarations/roster.js';

// The closed vocabulary of references (docs/manifest.md, "References"): `${<requirement>}` or
// `${<requirement>.<field>}`, where what the requirement is decides which fields it has, and
// `${route:<name>}`, the public URL of a route the module contributes (issue 122). Anything
// else — another form (`${answer:store.bucket}`), a name that is not a requirement
// of the module, a field its kind or its contract lacks — the composer could not fill, and issue
// 122 of the seeds is what happens when it is sent on as text. So registration refuses it.

type Raw = Record<string, unknown>;
const record = (value: unknown): Raw => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Raw) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Every `${…}` in a text, whatever is inside. */
const ANY_REFERENCE = /\$\{([^}]*)\}/g;
const NAME_FIELD = /^([a-z][a-z0-9-]*)(?:\.([A-Za-z0-9_-]+))?$/;
const KIND_FORM = /^([A-Za-z][A-Za-z0-9_-]*):/;
/** `${route:web}`: the public URL of the module's route `web`. */
export const ROUTE_REFERENCE = /^\$\{route:([a-z0-9-]+)\}$/;
/** `${bound:store.bucket}`: what the provider of requirement `store` derived for this consumer and answered (issue 124). */
export const BOUND_REFERENCE = /^\$\{bound:([a-z][a-z0-9-]*)\.([A-Za-z0-9_-]+)\}$/;

export interface Reference {
  /** as written, `${db.host}` */
  whole: string;
  requirement: string;
  field: string | undefined;
}

/** The kinds a requirement can be, each with the fields a reference may read from it. */
export type ReferenceKind = 'directory' | 'port' | 'value' | 'identity' | 'secret' | 'bus' | 'provision' | 'fact';

export const kindOf = (requirement: Raw): ReferenceKind => {
  const contract = text(requirement.contract);
  switch (text(requirement.provider)) {
    case 'host':
      return contract === 'directory' ? 'directory' : contract === 'port' ? 'port' : 'fact';
    case 'operator':
      return 'value';
    case 'mesh':
      return 'identity';
    default:
      return contract === 'secret' ? 'secret' : contract === 'mesh-bus' ? 'bus' : 'provision';
  }
};

/** The fields each kind answers by itself; a provision adds its contract's fields. `''` is the bare reference. */
const OWN_FIELDS: Readonly<Record<ReferenceKind, readonly string[]>> = {
  directory: ['', 'path'],
  port: ['', 'port'],
  value: [''],
  identity: ['name', 'node', 'module', 'address'],
  secret: ['', 'value', 'path'],
  bus: ['node', 'address', 'credential'],
  provision: ['node', 'address'],
  fact: [],
};

/** Does this reference stand for a path on the node's own disk? */
export const isHostPathReference = (kind: ReferenceKind, field: string | undefined): boolean =>
  (kind === 'directory' && (field === undefined || field === 'path')) || (kind === 'secret' && field === 'path') || (kind === 'bus' && field === 'credential');

const show = (field: string, requirement: string): string => (field === '' ? `\${${requirement}}` : `\${${requirement}.${field}}`);

/** Every reference in a text, or the problem with it. */
export const parseReferences = (value: string): { references: Reference[]; unknownForms: string[] } => {
  const references: Reference[] = [];
  const unknownForms: string[] = [];
  for (const match of value.matchAll(ANY_REFERENCE)) {
    const inner = match[1] ?? '';
    const parsed = NAME_FIELD.exec(inner);
    if (parsed) references.push({ whole: match[0], requirement: parsed[1] ?? '', field: parsed[2] });
    else unknownForms.push(match[0]);
  }
  return { references, unknownForms };
};

/** Where a manifest may write references: each text, by the field path a refusal names. */
export const referenceSites = (raw: Raw): { what: string; value: string; container?: number; answer?: boolean; roster?: boolean; perConsumerSecret?: boolean }[] => {
  const sites: { what: string; value: string; container?: number; answer?: boolean; roster?: boolean; perConsumerSecret?: boolean }[] = [];
  const texts = (what: string, value: unknown, container?: number, answer?: boolean): void => {
    if (typeof value === 'string') sites.push({ what, value, ...(container !== undefined ? { container } : {}), ...(answer ? { answer } : {}) });
    else if (Array.isArray(value)) value.forEach((v, i) => texts(`${what}.${i}`, v, container, answer));
    else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) texts(`${what}.${k}`, v, container, answer);
  };
  const resources = record(raw.resources);
  list(resources.containers).forEach((c, i) => {
    texts(`resources.containers.${i}.command`, record(c).command, i);
    texts(`resources.containers.${i}.env`, record(c).env, i);
  });
  list(resources.processes).forEach((p, i) => {
    texts(`resources.processes.${i}.run`, record(p).run);
    texts(`resources.processes.${i}.env`, record(p).env);
  });
  // A file's or region's content may repeat a line over the mesh's roster (ADR 0120): nothing else can.
  const content = (what: string, value: unknown): void => {
    if (typeof value === 'string') sites.push({ what, value, roster: true });
  };
  list(resources.files).forEach((f, i) => content(`resources.files.${i}.template`, record(f).template));
  list(resources.regions).forEach((r, i) => content(`resources.regions.${i}.template`, record(r).template));
  list(resources.runOnce).forEach((s, i) => texts(`resources.runOnce.${i}.command`, record(s).command, -1));
  texts('resources.prepare.command', record(resources.prepare).command);
  list(raw.provides).forEach((p, i) => {
    const before = sites.length;
    texts(`provides.${i}.answers`, record(p).answers, undefined, true);
    if (record(p).perConsumerSecret === true) for (const site of sites.slice(before)) site.perConsumerSecret = true;
  });
  return sites;
};

/** Why `${bound:<requirement>.<field>}` cannot be filled: only a provider module's answer binds, only a field its contract has, never a secret. */
const boundProblem = (whole: string, name: string, field: string, requirements: Map<string, Raw>, state: MeshState): { why: string; remedy: string } | undefined => {
  const requirement = requirements.get(name);
  if (!requirement) return { why: `${whole} names "${name}", which is not a requirement of this module`, remedy: `bind a requirement answered by a module (${[...requirements.keys()].join(', ') || 'none'})` };
  if (kindOf(requirement) !== 'provision') return { why: `${whole} binds "${name}", which no provider module answers, so nothing would derive a value for it`, remedy: 'bind a requirement answered by another module' };
  const contract = text(requirement.contract) ?? '';
  const fields = knownContractFields(state, contract);
  if (fields && !fields.includes(field)) return { why: `${whole} reads "${field}", a field the ${contract} contract lacks`, remedy: `bind one of: ${fields.map((f) => `\${bound:${name}.${f}}`).join(', ')}` };
  if (fields && knownContractField(state, contract, field)?.secret) return { why: `${whole} is a secret field, and a provider's answer carries no secret (ADR 0113)`, remedy: `read it as a file: \${${name}.${field}} in a file resource or a mount` };
  return undefined;
};

/** `${each:…}`, `${entry:…}`, `${end:…}`: the roster's block (src/domain/declarations/roster.ts). */
const ROSTER_TOKEN = /^\$\{(each|entry|end):/;
const ROSTER_VOCABULARY = 'a file or region repeats a line over the mesh\'s roster as ${each:machines} or ${each:names}, the line reading ${entry:name} and ${entry:address}, ended by ${end:each} (docs/manifest.md, "References")';

const VOCABULARY = 'a reference is ${<requirement>} or ${<requirement>.<field>} of one of the module\'s own requirements (docs/manifest.md, "References")';

/** Every reference the composer could not fill, and every host path a container could not see. */
export const referenceProblems = (raw: Raw, state: MeshState): Problem[] => {
  const requirements = new Map(list(raw.requires).flatMap((r) => (text(record(r).name) ? [[text(record(r).name) as string, record(r)] as const] : [])));
  const names = [...requirements.keys()].join(', ') || 'none';
  const containers = list(record(raw.resources).containers).map((c) => new Set(list(record(c).mounts).flatMap((m) => (text(record(m).from) ? [text(record(m).from) as string] : []))));
  const routes = list(raw.routes).flatMap((r) => (text(record(r).name) ? [text(record(r).name) as string] : []));
  const problems: Problem[] = [];
  for (const site of referenceSites(raw)) {
    const { references, unknownForms } = parseReferences(site.value);
    const roster = unknownForms.some((whole) => ROSTER_TOKEN.test(whole));
    if (roster && site.roster) for (const why of rosterBlocks(site.value).problems) problems.push({ what: site.what, why, remedy: ROSTER_VOCABULARY });
    for (const whole of unknownForms) {
      if (ROSTER_TOKEN.test(whole)) {
        if (!site.roster && !problems.some((p) => p.what === site.what && p.why.startsWith('a roster'))) {
          problems.push({ what: site.what, why: `a roster block (${whole}) repeats lines of a file, and this is no file's or region's template`, remedy: `write the roster into a file or region the module reads (resources.files, resources.regions): ${ROSTER_VOCABULARY}` });
        }
        continue;
      }
      const route = ROUTE_REFERENCE.exec(whole)?.[1];
      if (route !== undefined) {
        if (!routes.includes(route)) problems.push({ what: site.what, why: `${whole} names "${route}", which is no route of this module, so it has no public URL`, remedy: routes.length > 0 ? `write one of: ${routes.map((r) => `\${route:${r}}`).join(', ')}` : `contribute the route in routes ({ "name": "${route}", "port": "http-port" })` });
        continue;
      }
      const bound = BOUND_REFERENCE.exec(whole);
      if (bound) {
        const problem = boundProblem(whole, bound[1] ?? '', bound[2] ?? '', requirements, state);
        if (problem) problems.push({ what: site.what, ...problem });
        continue;
      }
      const kind = KIND_FORM.exec(whole.slice(2))?.[1];
      problems.push({
        what: site.what,
        why: kind ? `${whole} is a reference of kind "${kind}", which the composer does not know, so it would reach the process as text` : `${whole} is not a reference the composer can read, so it would reach the process as text`,
        remedy: `${VOCABULARY}${kind === 'answer' || kind === 'secret' ? `: a provider's field is \${<requirement>.<field>}` : ''}`,
      });
    }
    for (const ref of references) {
      // A provider's answer may name who asks: what it makes per consumer is named for it.
      if (site.answer && ref.requirement === 'consumer' && !requirements.has('consumer') && ['name', 'node', 'module', 'login'].includes(ref.field ?? '')) continue;
      // Which value of the secret the consumer is given it holds: only where there is one.
      if (site.answer && ref.requirement === 'consumer' && !requirements.has('consumer') && ref.field === 'secret-tag') {
        if (!site.perConsumerSecret) problems.push({ what: site.what, why: `${ref.whole} names which value of the secret each consumer is given it holds, and this provision gives its consumers no secret`, remedy: 'declare perConsumerSecret: true on the provision, or answer without it' });
        continue;
      }
      const requirement = requirements.get(ref.requirement);
      if (!requirement) {
        problems.push({ what: site.what, why: `${ref.whole} names "${ref.requirement}", which is not a requirement of this module, so nothing can fill it`, remedy: `reference one of its requirements (${names}), or add a requirement named ${ref.requirement}` });
        continue;
      }
      const kind = kindOf(requirement);
      const contract = text(requirement.contract) ?? '';
      const own = OWN_FIELDS[kind];
      const field = ref.field ?? '';
      if (kind === 'fact') {
        problems.push({ what: site.what, why: `${ref.whole} reads host ${contract}, which the composer has no value for`, remedy: 'read a directory, a port, an operator value, the mesh\'s identity or a provider\'s field' });
        continue;
      }
      if (!own.includes(field)) {
        const contractFields = kind === 'provision' || kind === 'bus' ? knownContractFields(state, contract) : undefined;
        if (contractFields?.includes(field)) {
          // a field of the provider's contract: answered by the provider, or held until it is
        } else if (contractFields === undefined && kind === 'provision' && field !== '') {
          // no provider has declared the contract yet: its fields are known when one registers,
          // and composition holds the reference, named, until the provider answers it
        } else {
          const readable = [...own, ...(contractFields ?? [])].map((f) => show(f, ref.requirement));
          problems.push({
            what: site.what,
            why:
              kind === 'provision' || kind === 'bus'
                ? field === ''
                  ? `${ref.whole} names a provision (${contract}), not a value`
                  : `${ref.whole} reads "${field}", a field the ${contract} contract lacks, so no provider would answer it`
                : `${ref.whole} reads "${field || '(the whole requirement)'}", which a ${kind} requirement does not have`,
            remedy: `write one of: ${readable.join(', ')}`,
          });
          continue;
        }
      }
      // A container sees only what it mounts (ADR 0107, R112.9): a host path it does not mount is a
      // name for nothing inside it.
      if (site.container !== undefined && isHostPathReference(kind, ref.field)) {
        const mounted = site.container >= 0 && kind !== 'bus' && containers[site.container]?.has(ref.requirement);
        if (!mounted) {
          problems.push({
            what: site.what,
            why:
              kind === 'bus'
                ? `${ref.whole} is a path on the node, and a container cannot mount the bus identity`
                : `${ref.whole} is a path on the node, and ${site.container >= 0 ? 'this container does not mount it' : 'a runOnce step mounts nothing'}, so it names nothing inside`,
            remedy:
              kind === 'bus'
                ? 'run the part that speaks on the bus as a process, or pass the bus URL and a credential file the container mounts'
                : `mount it ({ "from": "${ref.requirement}", "to": "/some/path" }) and the reference reads the path inside, or write the container-side path`,
          });
        }
      }
    }
  }
  return problems;
};
