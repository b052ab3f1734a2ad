import type { Logger } from 'pino';
import type { Declaration, DeclaredAssignment, Resource } from '../domain/declarations/declaration.js';
import type { ResourceOutcome } from '../domain/reports/report.js';
import type { Driver } from './drivers/driver.js';
import { readsSecretMarker, type FileDriver } from './drivers/file.js';
import type { ProcessDriver } from './drivers/process.js';
import type { RunOnceDriver } from './drivers/run-once.js';
import type { ServiceDriver } from './drivers/service.js';
import { sha256Digest } from '../domain/canonical.js';
import { isInside } from '../domain/host-paths.js';
import { refused, type Outcome } from './outcome.js';
import type { ResourceRecord } from './records.js';
import { matchRecords, resourceDigest, resourceIdentity, type Desired, type Matching } from './resource-identity.js';
import type { RecordStore } from './state-folder.js';

// One reconcile pass, controller-runtime style: it compares the declaration with the records and
// the machine and converges; it does not care what happened since the last pass, so running it
// twice does nothing the second time. Undeclared records go first (what is replaced stops before
// its successor starts), then every module applies its resources in their declared order. Modules
// apply side by side and independently: a failed step stops only its own module (ADR 0136).

export interface Drivers {
  directory: Driver<'directory'>;
  file: FileDriver;
  region: Driver<'region'>;
  service: ServiceDriver;
  'trust-anchor': Driver<'trust-anchor'>;
  secret: Driver<'secret'>;
  'bus-identity': Driver<'bus-identity'>;
  process: ProcessDriver;
  'run-once': RunOnceDriver;
  container: Driver<'container'>;
}

const STOPS_FIRST: Record<ResourceRecord['kind'], number> = { process: 0, container: 0, 'run-once': 0, service: 0, file: 1, region: 1, 'trust-anchor': 1, secret: 1, 'bus-identity': 1, directory: 2 };

export class Reconciler {
  constructor(
    private readonly drivers: Drivers,
    private readonly records: RecordStore,
    private readonly logger: Logger,
  ) {}

  async pass(declaration: Declaration): Promise<ResourceOutcome[]> {
    const resources = declaration.assignments.flatMap((a) => a.resources);
    const digests = new Map(resources.map((r) => [r.key, resourceDigest(r)]));
    const desired = resources.map((resource): Desired => ({ resource, digest: resourceDigest(resource), identity: resourceIdentity(resource, digests) }));
    const matching = matchRecords(desired, this.records.all());
    this.drivers['run-once'].cancelExcept(new Set(desired.filter((d) => d.resource.kind === 'run-once').map((d) => d.identity)));
    await this.undeclare(matching.leftovers);
    const outcomes = new Map<string, Outcome>();
    const byKey = new Map(desired.map((d) => [d.resource.key, d]));
    await Promise.all(declaration.assignments.map((assignment) => this.applyModule(assignment, byKey, matching, outcomes)));
    return resources.map((r) => ({ key: r.key, module: r.module, kind: r.kind, ...(outcomes.get(r.key) ?? refused('not applied')) }));
  }

  /** Gives back everything the agent applied for these records; what fails is tried again next pass. */
  private async undeclare(leftovers: ResourceRecord[]): Promise<void> {
    const ordered = [...leftovers].sort((a, b) => STOPS_FIRST[a.kind] - STOPS_FIRST[b.kind] || ('path' in b ? b.path.length : 0) - ('path' in a ? a.path.length : 0));
    for (const record of ordered) {
      try {
        await this.undeclareOne(record);
      } catch (error) {
        this.logger.warn({ key: record.key, err: error }, 'could not undeclare; trying again at the next pass');
      }
    }
  }

  private undeclareOne(record: ResourceRecord): Promise<void> {
    switch (record.kind) {
      case 'directory':
        return this.drivers.directory.undeclare(record);
      case 'file':
        return this.drivers.file.undeclare(record);
      case 'region':
        return this.drivers.region.undeclare(record);
      case 'service':
        return this.drivers.service.undeclare(record);
      case 'trust-anchor':
        return this.drivers['trust-anchor'].undeclare(record);
      case 'secret':
        return this.drivers.secret.undeclare(record);
      case 'bus-identity':
        return this.drivers['bus-identity'].undeclare(record);
      case 'process':
        return this.drivers.process.undeclare(record);
      case 'run-once':
        return this.drivers['run-once'].undeclare(record);
      case 'container':
        return this.drivers.container.undeclare(record);
      default: {
        const unreachable: never = record;
        return unreachable;
      }
    }
  }

  private async applyModule(assignment: DeclaredAssignment, byKey: Map<string, Desired>, matching: Matching, outcomes: Map<string, Outcome>): Promise<void> {
    // A file filled from a secret is written after the module's secrets are placed, in the same pass.
    const readsSecret = (resource: Resource) => resource.kind === 'file' && readsSecretMarker(resource.content);
    for (const resource of [...assignment.resources.filter((r) => !readsSecret(r)), ...assignment.resources.filter(readsSecret)]) {
      const desired = byKey.get(resource.key) as Desired;
      const duplicate = matching.duplicates.get(resource.key);
      if (duplicate) {
        outcomes.set(resource.key, refused(`${resource.kind} ${'path' in resource ? resource.path : ''} is also declared as ${duplicate}`));
        continue;
      }
      try {
        outcomes.set(resource.key, await this.applyOne(desired, matching.records.get(resource.key), gateOf(resource, assignment, outcomes), byKey));
      } catch (error) {
        this.logger.warn({ key: resource.key, err: error }, 'could not apply');
        outcomes.set(resource.key, refused(`could not apply: ${(error as Error).message}`));
      }
    }
  }

  private applyOne({ resource, identity, digest }: Desired, found: ResourceRecord | undefined, gate: string | null, byKey: ReadonlyMap<string, Desired>): Promise<Outcome> {
    // Identities differ between kinds, so a matched record is of the resource's kind.
    const common = { identity, digest, gate };
    switch (resource.kind) {
      case 'directory':
        return this.drivers.directory.apply({ ...common, resource, record: found as Extract<ResourceRecord, { kind: 'directory' }> | undefined });
      case 'file':
        return this.drivers.file.apply({ ...common, resource, record: found as Extract<ResourceRecord, { kind: 'file' }> | undefined }, secretFilesOf(resource.module, byKey), placeOf(resource.module, resource.path, byKey));
      case 'region':
        return this.drivers.region.apply({ ...common, resource, record: found as Extract<ResourceRecord, { kind: 'region' }> | undefined });
      case 'service': {
        const triggers = sha256Digest(resource.reloadOn.map((key) => byKey.get(key)?.digest ?? null));
        return this.drivers.service.apply({ ...common, resource, triggers, record: found as Extract<ResourceRecord, { kind: 'service' }> | undefined });
      }
      case 'trust-anchor':
        return this.drivers['trust-anchor'].apply({ ...common, resource, record: found as Extract<ResourceRecord, { kind: 'trust-anchor' }> | undefined });
      case 'secret':
        return this.drivers.secret.apply({ ...common, resource, record: found as Extract<ResourceRecord, { kind: 'secret' }> | undefined });
      case 'bus-identity':
        return this.drivers['bus-identity'].apply({ ...common, resource, record: found as Extract<ResourceRecord, { kind: 'bus-identity' }> | undefined });
      case 'process':
        return this.drivers.process.apply({ ...common, resource, record: found as Extract<ResourceRecord, { kind: 'process' }> | undefined });
      case 'run-once':
        return this.drivers['run-once'].apply({ ...common, resource, record: found as Extract<ResourceRecord, { kind: 'run-once' }> | undefined });
      case 'container':
        return this.drivers.container.apply({ ...common, resource, record: found as Extract<ResourceRecord, { kind: 'container' }> | undefined });
      default: {
        const unreachable: never = resource;
        return unreachable;
      }
    }
  }
}

/**
 * Why a resource may not start yet: a key in its `after` that has not applied. A step gates only
 * its own module (ADR 0136), and only a step declared before what it gates, so a module never
 * waits on another and a pass never waits on itself.
 */
/** Where the agent places each secret declared to a module here, by the secret's name: what a file's `${secret:NAME}` reads. */
const secretFilesOf = (module: string, byKey: ReadonlyMap<string, Desired>): Map<string, string> =>
  new Map([...byKey.values()].flatMap(({ resource }) => (resource.kind === 'secret' && resource.module === module ? [[resource.secret, resource.path] as const] : [])));

/** The module's directory a file is written into: the deepest of its declared directories that holds its path (none: the file's own folder). */
const placeOf = (module: string, path: string, byKey: ReadonlyMap<string, Desired>): string | undefined =>
  [...byKey.values()]
    .flatMap(({ resource }) => (resource.kind === 'directory' && resource.module === module && isInside(path, resource.path) ? [resource.path] : []))
    .sort((a, b) => b.length - a.length)[0];

const gateOf = (resource: Resource, assignment: DeclaredAssignment, outcomes: ReadonlyMap<string, Outcome>): string | null => {
  const after = 'after' in resource ? resource.after : [];
  for (const key of after) {
    if (!assignment.resources.some((r) => r.key === key)) return `waiting for ${key}, which is not declared in module ${assignment.module}`;
    const outcome = outcomes.get(key);
    if (!outcome) return `waiting for ${key}, which is declared after it`;
    if (outcome.outcome === 'applied') continue;
    if (outcome.outcome === 'refused') return `waiting for ${key}, which failed: ${outcome.reason}`;
    return `waiting for ${key}: ${outcome.reason ?? outcome.outcome}`;
  }
  return null;
};
