import type { z } from 'zod';
import type { Problem } from '../refusal.js';
import type { MeshState } from '../mesh/state.js';
import { allSeats, seatNamed } from '../seats/state.js';
import { hasSystemPrefix } from '../seats/system-seats.js';
import { knownContractField } from './contracts.js';
import { isLocalName } from './manifest.js';
import { mountProblems } from './mounts.js';
import { referenceProblems } from './references.js';
import { moduleNamed } from './state.js';
import { valueProblems } from './value-checks.js';
import { pathProblems } from './paths.js';
import { isCredentialField, isPolicyPath, routeProblems } from '../routes/checks.js';
import { installationLiteralProblems } from './installation-literals.js';
import { RESERVED_INBOX_HEADS } from '../bus/subjects.js';

// Registration's rules, each a function from the manifest as written to the problems it has. They
// read the raw input defensively, so a manifest with a schema error still gets every other rule
// checked: an operator fixes it in one pass.

type Raw = Record<string, unknown>;
const record = (value: unknown): Raw => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Raw) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const texts = (value: unknown): string[] => list(value).flatMap((v) => (typeof v === 'string' ? [v] : []));

/** The schema's own complaints: unknown fields, wrong types, missing fields. */
export const schemaProblems = (issues: readonly z.core.$ZodIssue[]): Problem[] =>
  issues.flatMap((issue): Problem[] => {
    const at = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      // A credential in a route's policy is named by the route rules, with what to write instead.
      const keys = isPolicyPath(at) ? issue.keys.filter((key) => !isCredentialField(key)) : issue.keys;
      return keys.map((key) => ({
        what: at ? `${at}.${key}` : key,
        why: 'unknown field',
        remedy:
          !at && key === 'serves'
            ? 'write it as tools: the tools a module serves are listed under tools (design 32 §1 renamed serves)'
            : 'remove it; docs/manifest.md lists every field a manifest may have',
      }));
    }
    return [{ what: at || '(manifest)', why: issue.message, remedy: 'see docs/manifest.md for this field' }];
  });

// Subjects are the mesh's to derive (design 32 §12): none is written in a manifest.
const SUBJECT = /^(mesh|\$JS|\$SYS|\$KV|\$O|_INBOX)(\.[^.\s]+)+$|(^|\.)>$|\.\*\./;
const LOCAL_NAME_FIELDS = new Set(['emits', 'consumes', 'tools', 'uses', 'accepts', 'serves', 'verb']);

const subjectProblems = (value: unknown, path: string[], problems: Problem[]): void => {
  if (typeof value === 'string') {
    if (SUBJECT.test(value)) {
      problems.push({
        what: path.join('.'),
        why: `"${value}" is a bus subject, and a manifest contains none`,
        remedy: 'declare emits / consumes / uses / tools / seats and the mesh derives the subjects (design 32)',
      });
    }
    return;
  }
  if (Array.isArray(value)) value.forEach((item, i) => subjectProblems(item, [...path, String(i)], problems));
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (LOCAL_NAME_FIELDS.has(key)) continue;
      subjectProblems(item, [...path, key], problems);
    }
  }
};

const eventNameProblems = (raw: Raw, moduleName: string, state: MeshState): Problem[] => {
  const problems: Problem[] = [];
  texts(raw.emits).forEach((name, i) => {
    const what = `emits.${i}`;
    if (name.startsWith('module.')) {
      const verb = name.split('.').slice(2).join('.') || 'event';
      problems.push({ what, why: `"${name}" is the old event-name form module.<module>.<verb>`, remedy: `write "${verb}": emits are local names, placed under the module by the mesh` });
    } else if (/[*>#]/.test(name)) {
      problems.push({ what, why: `"${name}" has a wildcard, and a module emits named events only`, remedy: 'list each event name it emits' });
    } else if (!isLocalName(name)) {
      problems.push({ what, why: `"${name}" is not a local event name`, remedy: 'use dot-separated lower-case words, e.g. repository.pushed' });
    } else {
      // Design 32 §1, issue 127 of the seeds: an event is its emitter's; a name that starts with
      // another module's reads, to every consumer, as that module's event.
      const [first = '', ...rest] = name.split('.');
      if (rest.length > 0 && first !== moduleName && moduleNamed(state.catalogue, first)) {
        problems.push({
          what,
          why: `"${name}" starts with "${first}", the name of another registered module: it reads as ${first}'s event, yet ${moduleName} would publish it (as mesh.mod.${moduleName}.event.${name})`,
          remedy: `name it for what happened, without ${first}'s name, e.g. "${rest.join('.')}"; ${first}'s own events are ${first}'s to emit`,
        });
      }
    }
  });
  texts(raw.consumes).forEach((pattern, i) => {
    const what = `consumes.${i}`;
    if (pattern.startsWith('module.')) {
      const rest = pattern.split('.').slice(1).join('.');
      problems.push({ what, why: `"${pattern}" is the old event-name form module.<module>.<verb>`, remedy: `write "${rest}": <emitter>.<event>` });
    } else if (pattern.includes('#')) {
      problems.push({ what, why: `"${pattern}" uses '#', which the mesh does not know`, remedy: `write "${pattern.replaceAll('#', '**')}": '*' is one name, '**' the rest` });
    } else if (pattern.includes('>')) {
      problems.push({ what, why: `"${pattern}" uses '>', a wire wildcard`, remedy: `write "${pattern.replaceAll('>', '**')}": '*' is one name, '**' the rest` });
    } else if (pattern.split('.').some((token, j, all) => token === '**' && j !== all.length - 1)) {
      problems.push({ what, why: `"${pattern}" has '**' before the end`, remedy: "'**' stands for the rest of a name, so it comes last" });
    }
  });
  return problems;
};

const requiresBus = (raw: Raw): boolean => list(raw.requires).some((r) => text(record(r).contract) === 'mesh-bus');

const busProblems = (raw: Raw): Problem[] => {
  if (requiresBus(raw)) return [];
  const speaking = (['emits', 'consumes', 'tools', 'uses', 'seats'] as const).filter((field) => list(raw[field]).length > 0);
  return speaking.map((field) => ({
    what: field,
    why: `declares ${field} but does not require mesh-bus, so it has no connection to speak on (ADR 0128)`,
    remedy: 'add { "name": "bus", "contract": "mesh-bus", "provider": "module", "seat": "mesh-broker" } to requires',
  }));
};

const amqpProblems = (raw: Raw): Problem[] => [
  ...list(raw.provides).flatMap((p, i) =>
    text(record(p).provision) === 'amqp'
      ? [{ what: `provides.${i}`, why: 'amqp is neither a provision nor a requirement (ADR 0131)', remedy: 'speak over the mesh bus: require mesh-bus and declare emits / consumes / uses' }]
      : [],
  ),
  ...list(raw.requires).flatMap((r, i) =>
    text(record(r).contract) === 'amqp'
      ? [{ what: `requires.${i}`, why: 'amqp is neither a provision nor a requirement (ADR 0131)', remedy: 'require mesh-bus and declare what the module emits and consumes' }]
      : [],
  ),
];

const claimNames = (raw: Raw): { name: string; scope?: string; at: string }[] =>
  list(raw.canHold).flatMap((claim, i) => {
    const name = typeof claim === 'string' ? claim : text(record(claim).seat);
    const scope = typeof claim === 'string' ? undefined : text(record(claim).scope);
    return name ? [{ name, ...(scope ? { scope } : {}), at: `canHold.${i}` }] : [];
  });

const seatProblems = (raw: Raw, moduleName: string, state: MeshState): Problem[] => {
  const problems: Problem[] = [];
  const declared = list(raw.seats).map((s) => record(s));
  declared.forEach((seat, i) => {
    const name = text(seat.name);
    if (!name) return;
    if (hasSystemPrefix(name)) {
      problems.push({
        what: `seats.${i}.name`,
        why: `"${name}" starts with ${name.startsWith('mesh-') ? 'mesh-' : 'node-'}, a prefix the mesh reserves for its own seats (ADR 0121, 0126)`,
        remedy: `name the seat for the module's role without the prefix, e.g. "${name.replace(/^(mesh|node)-/, '')}"`,
      });
      return;
    }
    const existing = seatNamed(state.seats, name);
    if (existing && !(existing.definer.kind === 'module' && existing.definer.module === moduleName)) {
      const by = existing.definer.kind === 'module' ? `module ${existing.definer.module}` : 'the mesh';
      problems.push({ what: `seats.${i}.name`, why: `seat "${name}" is already declared by ${by}; a seat has one declarer (ADR 0126)`, remedy: `claim it in canHold instead, or choose another name` });
    }
  });

  const declaredNames = new Set(declared.flatMap((s) => (text(s.name) ? [text(s.name) as string] : [])));
  const known = (name: string) => declaredNames.has(name) || seatNamed(state.seats, name) !== undefined;
  const existingNames = () => [...new Set([...[...allSeats(state.seats)].map((s) => s.name), ...declaredNames])].sort().join(', ');
  const provided = new Set(list(raw.provides).flatMap((p) => (text(record(p).provision) ? [text(record(p).provision) as string] : [])));

  for (const claim of claimNames(raw)) {
    const seat = seatNamed(state.seats, claim.name);
    if (!known(claim.name)) {
      problems.push({ what: claim.at, why: `no seat "${claim.name}" exists`, remedy: `claim one of the seats that exist: ${existingNames()}` });
      continue;
    }
    const scope = seat?.scope ?? text(declared.find((d) => text(d.name) === claim.name)?.scope);
    if (claim.scope && scope && claim.scope !== scope) {
      problems.push({ what: claim.at, why: `seat "${claim.name}" is ${scope}-scoped, not ${claim.scope}-scoped`, remedy: `write scope "${scope}" or leave it out` });
    }
    if (seat?.delivers && !provided.has(seat.delivers)) {
      problems.push({
        what: claim.at,
        why: `seat "${claim.name}" delivers ${seat.delivers}, which this module does not provide (ADR 0110, R110.2)`,
        remedy: `provide ${seat.delivers}, or drop the claim`,
      });
    }
  }

  texts(raw.uses).forEach((name, i) => {
    if (!known(name)) problems.push({ what: `uses.${i}`, why: `"${name}" is a seat nobody declares (ADR 0126, R126.3)`, remedy: `use one of the seats that exist: ${existingNames()}` });
  });

  if (provided.has('secret') && !claimNames(raw).some((c) => seatNamed(state.seats, c.name)?.name === 'mesh-vault' || c.name === 'mesh-vault')) {
    problems.push({
      what: 'provides',
      why: 'only the holder of mesh-vault may provide secret (ADR 0110, R110.8)',
      remedy: 'add mesh-vault to canHold, or require a secret instead of providing one',
    });
  }
  return problems;
};

const requirementProblems = (raw: Raw, state: MeshState): Problem[] => {
  const problems: Problem[] = [];
  const names = new Set<string>();
  list(raw.requires).forEach((r, i) => {
    const requirement = record(r);
    const name = text(requirement.name);
    const contract = text(requirement.contract);
    const seatName = text(requirement.seat);
    if (name && names.has(name)) problems.push({ what: `requires.${i}.name`, why: `requirement "${name}" is named twice`, remedy: 'give each requirement its own name' });
    if (name) names.add(name);
    if (contract === 'secret' && seatName !== 'mesh-vault') {
      problems.push({ what: `requires.${i}`, why: 'a secret is always answered by the holder of mesh-vault (R110.8)', remedy: 'write "seat": "mesh-vault"' });
    }
    if (seatName) {
      const seat = seatNamed(state.seats, seatName);
      if (!seat) {
        problems.push({ what: `requires.${i}.seat`, why: `no seat "${seatName}" exists`, remedy: `name a seat that delivers ${contract ?? 'the contract'}, or none` });
      } else if (!seat.delivers) {
        problems.push({ what: `requires.${i}.seat`, why: `seat "${seatName}" delivers nothing, so no requirement can name it (R110.6)`, remedy: 'leave the seat out: the provider is found by pin, by node or as the only one' });
      } else if (contract && seat.delivers !== contract) {
        problems.push({ what: `requires.${i}.seat`, why: `seat "${seatName}" delivers ${seat.delivers}, not ${contract}`, remedy: `name the seat that delivers ${contract}, or none` });
      }
    }
  });
  return problems;
};

/** `${requirement.field}`: the one form a definition uses to read what a requirement answered. */
const REFERENCE = /\$\{([a-z][a-z0-9-]*)(?:\.([A-Za-z0-9_-]+))?\}/g;

const secretEnvProblems = (raw: Raw, state: MeshState): Problem[] => {
  const requirements = new Map(list(raw.requires).map((r) => [text(record(r).name) ?? '', record(r)]));
  const isSecret = (requirementName: string, field: string | undefined): boolean => {
    const requirement = requirements.get(requirementName);
    if (!requirement) return false;
    if (requirement.secret === true || text(requirement.contract) === 'secret') return true;
    // The bus's credential is filled with the path of the module's identity file, never the key itself.
    if (text(requirement.contract) === 'mesh-bus' && field === 'credential') return false;
    return field !== undefined && knownContractField(state, text(requirement.contract) ?? '', field)?.secret === true;
  };
  const problems: Problem[] = [];
  const resources = record(raw.resources);
  for (const kind of ['containers', 'processes'] as const) {
    list(resources[kind]).forEach((resource, i) => {
      for (const [variable, value] of Object.entries(record(record(resource).env))) {
        if (typeof value !== 'string') continue;
        for (const match of value.matchAll(REFERENCE)) {
          if (isSecret(match[1] ?? '', match[2])) {
            problems.push({
              what: `resources.${kind}.${i}.env.${variable}`,
              why: `${match[0]} is a secret, and a secret never reaches a process as an environment value (ADR 0086)`,
              remedy: 'deliver it as a file (a file resource or a mount) and point the process at the file, or list an envFiles entry with its reason',
            });
          }
        }
      }
    });
  }
  return problems;
};

/**
 * A service reloads on a setting of its own module — a file or a region it writes — and a unit is
 * acted on by one service resource (two would each record a found state of it).
 */
const serviceProblems = (raw: Raw): Problem[] => {
  const resources = record(raw.resources);
  const settings = new Set([...list(resources.files), ...list(resources.regions)].flatMap((r) => text(record(r).name) ?? []));
  const problems: Problem[] = [];
  const units = new Map<string, number>();
  list(resources.services).forEach((service, i) => {
    const unit = text(record(service).unit);
    const first = unit === undefined ? undefined : units.get(unit);
    if (unit !== undefined && first !== undefined) problems.push({ what: `resources.services.${i}.unit`, why: `${unit} is already resources.services.${first}.unit`, remedy: 'declare each unit once, with its state, enabled and reloadOn together' });
    else if (unit !== undefined) units.set(unit, i);
    list(record(service).reloadOn).forEach((name, j) => {
      if (typeof name === 'string' && !settings.has(name)) {
        problems.push({
          what: `resources.services.${i}.reloadOn.${j}`,
          why: `"${name}" is no file or region of this module${settings.size > 0 ? ` (it has ${[...settings].join(', ')})` : ''}`,
          remedy: 'name a file or region the module writes, whose change the unit must read',
        });
      }
    });
  });
  return problems;
};

/** Every rule a manifest must pass to be registered, all at once. */
/** Checked at registration only: a log that holds such a name already still reads. */
const moduleNameProblems = (moduleName: string): Problem[] => {
  if (RESERVED_INBOX_HEADS.includes(moduleName)) {
    return [{ what: 'name', why: `"${moduleName}" is refused as a module name: the bus gives a module the inbox _INBOX.<module>.<node>, and _INBOX.${moduleName}.… is the mesh's own (${RESERVED_INBOX_HEADS.join(', ')} are reserved)`, remedy: 'choose another name' }];
  }
  return [];
};

export const registrationProblems = (manifest: unknown, state: MeshState): Problem[] => {
  const raw = record(manifest);
  const moduleName = text(raw.name) ?? '';
  const subjects: Problem[] = [];
  subjectProblems(raw, [], subjects);
  return [
    ...moduleNameProblems(moduleName),
    ...subjects,
    ...eventNameProblems(raw, moduleName, state),
    ...busProblems(raw),
    ...amqpProblems(raw),
    ...seatProblems(raw, moduleName, state),
    ...requirementProblems(raw, state),
    ...secretEnvProblems(raw, state),
    ...mountProblems(raw, state),
    ...referenceProblems(raw, state),
    ...valueProblems(raw),
    ...pathProblems(raw),
    ...serviceProblems(raw),

    ...routeProblems(raw),
    ...installationLiteralProblems(raw, moduleName, state),
  ];
};
