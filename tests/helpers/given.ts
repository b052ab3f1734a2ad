import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/config.js';
import { decideMeshCommand, type MeshCommand } from '../../src/domain/mesh/commands.js';
import type { ProposedEvent } from '../../src/domain/events/envelope.js';
import { meshEventRegistry, type MeshEvent, type StoredMeshEvent } from '../../src/domain/registry.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../../src/domain/mesh/state.js';
import { SYSTEM_SEATS } from '../../src/domain/seats/system-seats.js';
import type { Problem } from '../../src/domain/refusal.js';
import { Refusal } from '../../src/domain/refusal.js';

// Given events / when command / then events or refusal: the deciders' tests, with no I/O.

let seq = 0;

const registry = meshEventRegistry();

/** An event as the log would hand it back: checked by its type's schema, as the log checks it on append. */
/** `event`, which a test expects to be of `type`: what the decider stated, typed as that type's schema has it. */
export const eventOf = <T extends MeshEvent['type']>(event: MeshEvent | undefined, type: T): Extract<MeshEvent, { type: T }> => {
  const found = [event].find((e): e is Extract<MeshEvent, { type: T }> => e?.type === type);
  if (!found) throw new Error(`expected a ${type} event, not ${event?.type ?? 'none'}`);
  return found;
};

export const stored = (aggregate: string, event: ProposedEvent, commandId = `c${seq + 1}`): StoredMeshEvent => {
  seq++;
  const typed = registry.validateNew(event.type, event.data, 'event');
  return { id: `e${seq}`, schemaVersion: 1, aggregate, time: '2026-01-01T00:00:00.000Z', actor: 'test', commandId, causationId: commandId, correlationId: commandId, ...typed, seq, index: 0, version: 1 };
};

/** A mesh built by running commands through the deciders, as the log would have recorded them. */
export class MeshFixture {
  readonly state: MeshState = emptyMeshState();

  constructor(options: { systemSeats?: boolean } = {}) {
    if (options.systemSeats ?? true) for (const seat of SYSTEM_SEATS) this.run({ type: 'define-system-seat', seat });
  }

  /** Decides and records a command; throws its refusal. */
  run(command: MeshCommand): MeshEvent[] {
    const decision = decideMeshCommand(command, this.state);
    for (const event of decision.events) evolveMesh(this.state, stored(decision.aggregate, event));
    return decision.events;
  }

  register(manifest: unknown): MeshEvent[] {
    return this.run({ type: 'register-module', manifest });
  }

  registerFixture(name: string): MeshEvent[] {
    return this.register(fixtureManifest(name));
  }

  node(name: string, root?: string): this {
    this.run({ type: 'add-node', node: name, ...(root ? { root } : {}) });
    return this;
  }

  assign(module: string, node: string, options: Partial<{ hold: string[]; pins: Record<string, { node: string; module: string }>; values: Record<string, string>; placements: Record<string, string> }> = {}): MeshEvent[] {
    return this.run({ type: 'assign', module, node, hold: options.hold ?? [], pins: options.pins ?? {}, values: options.values ?? {}, placements: options.placements ?? {} });
  }

  /** The refusal a command meets; fails the test if it is accepted. */
  refusal(command: MeshCommand): Problem[] {
    try {
      decideMeshCommand(command, this.state);
    } catch (error) {
      if (error instanceof Refusal) return [...error.problems];
      throw error;
    }
    throw new Error(`expected ${command.type} to be refused, and it was accepted`);
  }
}

export const fixtureManifest = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(projectRoot, 'fixtures', 'modules', `${name}.json`), 'utf8')) as Record<string, unknown>;

export const FIXTURE_MODULES = ['nats', 'distribution', 'vault', 'postgres', 'gitea', 'builder', 'catalogue', 'route-proxy', 'audit-logger', 'telegram-sender', 'showcase'] as const;

/** The modules a local demo mesh really runs: small HTTP servers and a stand-in for the bus. */
export const DEMO_MODULES = ['local-bus', 'greeter', 'caller'] as const;

/** A bus-speaking module with nothing else: the base most tests add one thing to. */
export const minimalModule = (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  name,
  requires: [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }],
  ...extra,
});
