import { defineSlice } from '../slice.js';
import type { RotationParty } from './events.js';
import type { StoredMeshEvent } from '../registry.js';

// The secrets the log names: for each, what it is for, its current version and who may have it,
// and the rotation under way, if any — a fold of its steps, so a restarted controller knows where
// it was (docs/decisions.md, "Rotating a secret").

export interface Rotation {
  from: number;
  version: number;
  parties: 'two' | 'one';
  appliers: RotationParty[];
  readers: RotationParty[];
  /** the vault holds the new version */
  made: boolean;
  /** `node/module` of each applier that runs with both versions */
  applied: Set<string>;
  /** `node/module` of each reader that runs with the new version */
  confirmed: Set<string>;
  /** the log sequence it started at */
  startedSeq: number;
  /** abandoned after its readers were handed the new value: unwinding until each runs with the old one again */
  abandoned?: boolean;
  /** `node/module` of each reader back on the old version, while it unwinds */
  reverted?: Set<string>;
}

/** Its readers were handed the new value: every applier holds both, and there are readers. */
export const readersHandedNew = (rotation: Rotation): boolean => rotation.made && rotation.readers.length > 0 && rotation.appliers.every((p) => rotation.applied.has(partyKey(p)));

/**
 * A rotation after `secret.rotation-abandoned`: unwinding when its readers were handed the new
 * value (they go back first, the appliers keeping both meanwhile), else over. A second abandon,
 * while it unwinds, ends it.
 */
export const afterAbandoned = (rotation: Rotation): Rotation | null => (!rotation.abandoned && readersHandedNew(rotation) ? { ...rotation, abandoned: true, reverted: new Set() } : null);

/** A rotation after `secret.rotation-reverted` of `party`: over once every reader is back on the old value. */
export const afterReverted = (rotation: Rotation, party: RotationParty): Rotation | null => {
  const reverted = new Set(rotation.reverted).add(partyKey(party));
  return rotation.readers.every((p) => reverted.has(partyKey(p))) ? null : { ...rotation, reverted };
};

type RotationEventType = 'secret.rotation-started' | 'secret.rotation-made' | 'secret.rotation-applied' | 'secret.rotation-confirmed' | 'secret.rotation-retired' | 'secret.rotation-abandoned' | 'secret.rotation-reverted';
export type RotationEvent = Extract<StoredMeshEvent, { type: RotationEventType }>;

/**
 * The rotation under way after one of its events: one set of rules, for the fold and the
 * `secrets` projection alike. Null: none is under way any more (retired, abandoned, unwound).
 * Undefined: the event is not for this rotation and changes nothing.
 */
export const rotationAfter = (rotation: Rotation | null, event: RotationEvent): Rotation | null | undefined => {
  if (event.type === 'secret.rotation-started') {
    if (rotation) return undefined;
    const { from, version, parties, appliers, readers } = event.data;
    return { from, version, parties, appliers, readers, made: false, applied: new Set(), confirmed: new Set(), startedSeq: event.seq };
  }
  if (rotation?.version !== event.data.version) return undefined;
  switch (event.type) {
    case 'secret.rotation-made':
      return { ...rotation, made: true };
    case 'secret.rotation-applied':
      return { ...rotation, applied: new Set(rotation.applied).add(partyKey(event.data)) };
    case 'secret.rotation-confirmed':
      return { ...rotation, confirmed: new Set(rotation.confirmed).add(partyKey(event.data)) };
    case 'secret.rotation-retired':
      return null;
    case 'secret.rotation-abandoned':
      return afterAbandoned(rotation);
    case 'secret.rotation-reverted':
      return rotation.abandoned ? afterReverted(rotation, event.data) : undefined;
  }
};

/** A secret after one of its rotation's events: the rotation, the version a retirement makes current, the highest a start reaches. */
export const secretAfterRotationEvent = <S extends { version: number; highest: number }>(secret: S, rotation: Rotation | null, event: RotationEvent): (S & { rotation: Rotation | null }) | undefined => {
  const next = rotationAfter(rotation, event);
  if (next === undefined) return undefined;
  return {
    ...secret,
    rotation: next,
    version: event.type === 'secret.rotation-retired' ? event.data.version : secret.version,
    highest: event.type === 'secret.rotation-started' ? Math.max(secret.highest, event.data.version) : secret.highest,
  };
};

export interface SecretState {
  secret: string;
  purpose: string;
  version: number;
  recipients: string[];
  /** the log sequence of its last change */
  seq: number;
  /** the highest version it ever had, an abandoned rotation's included: a new one goes above it */
  highest: number;
  rotation: Rotation | null;
  /** `vault`: made by the vault for an assignment; `genesis`: the mesh's own, made at genesis */
  origin: 'vault' | 'genesis';
  /** the mesh's own: the holder of mesh-vault it was handed to, once it was */
  handedOver: RotationParty | null;
}

export interface SecretsState {
  byName: Map<string, SecretState>;
}

export const partyKey = (party: RotationParty): string => `${party.node}/${party.module}`;

export const secretsSlice = defineSlice({
  eventTypes: ['secret.made', 'secret.shared', 'secret.founded', 'secret.handed-over', 'secret.rotation-started', 'secret.rotation-made', 'secret.rotation-applied', 'secret.rotation-confirmed', 'secret.rotation-retired', 'secret.rotation-abandoned', 'secret.rotation-reverted'] as const,
  empty: (): SecretsState => ({ byName: new Map() }),
  evolve(state, event) {
    const known = state.byName.get(event.data.secret);
    switch (event.type) {
      case 'secret.made':
        state.byName.set(event.data.secret, { secret: event.data.secret, purpose: event.data.purpose, version: event.data.version, recipients: [...event.data.recipients], seq: event.seq, highest: Math.max(known?.highest ?? 0, event.data.version), rotation: known?.rotation ?? null, origin: 'vault', handedOver: null });
        return;
      case 'secret.founded':
        if (known) return;
        state.byName.set(event.data.secret, { secret: event.data.secret, purpose: event.data.purpose, version: event.data.version, recipients: event.data.sealedTo.map((s) => s.name), seq: event.seq, highest: event.data.version, rotation: null, origin: 'genesis', handedOver: null });
        return;
      case 'secret.handed-over':
        if (known?.origin === 'genesis' && known.version === event.data.version) state.byName.set(event.data.secret, { ...known, handedOver: { ...event.data.vault }, seq: event.seq });
        return;
      case 'secret.shared':
        if (known && known.version === event.data.version) state.byName.set(event.data.secret, { ...known, recipients: [...event.data.recipients], seq: event.seq });
        return;
      case 'secret.rotation-started':
      case 'secret.rotation-made':
      case 'secret.rotation-applied':
      case 'secret.rotation-confirmed':
      case 'secret.rotation-retired':
      case 'secret.rotation-abandoned':
      case 'secret.rotation-reverted': {
        const next = known && secretAfterRotationEvent(known, known.rotation, event);
        if (next) state.byName.set(event.data.secret, { ...next, seq: event.seq });
        return;
      }
    }
  },
});

export const secretNamed = (state: SecretsState, name: string): SecretState | undefined => state.byName.get(name);

export const allSecrets = (state: SecretsState): IterableIterator<SecretState> => state.byName.values();

/** Where a rotation stands: its step and whom it waits on (the vault, appliers, readers). */
export type RotationStep =
  | { step: 'making'; waitsOn: 'vault' }
  | { step: 'applying'; waitsOn: RotationParty[] }
  | { step: 'reading'; waitsOn: RotationParty[] }
  | { step: 'retiring'; waitsOn: 'vault' }
  | { step: 'unwinding'; waitsOn: RotationParty[] };

export const rotationStep = (rotation: Rotation): RotationStep => {
  if (rotation.abandoned) return { step: 'unwinding', waitsOn: rotation.readers.filter((p) => !rotation.reverted?.has(partyKey(p))) };
  if (!rotation.made) return { step: 'making', waitsOn: 'vault' };
  const appliers = rotation.appliers.filter((p) => !rotation.applied.has(partyKey(p)));
  if (appliers.length > 0) return { step: 'applying', waitsOn: appliers };
  const readers = rotation.readers.filter((p) => !rotation.confirmed.has(partyKey(p)));
  if (readers.length > 0) return { step: 'reading', waitsOn: readers };
  return { step: 'retiring', waitsOn: 'vault' };
};

/**
 * The versions a party is declared of a secret: the first at its path, a second at `<path>.next`.
 * None for a secret never rotated (the vault's current is placed). An applier holds both from the
 * moment the vault made the new one; a reader moves to the new one once every applier holds both.
 */
export const declaredVersions = (secret: SecretState | undefined, party: RotationParty): number[] | undefined => {
  if (!secret) return undefined;
  const rotation = secret.rotation;
  if (!rotation) return secret.highest > 1 ? [secret.version] : undefined;
  const key = partyKey(party);
  // Unwinding an abandoned rotation: readers back on the old value, appliers holding both until they are.
  if (rotation.abandoned) return rotation.appliers.some((p) => partyKey(p) === key) ? [rotation.from, rotation.version] : [rotation.from];
  if (rotation.appliers.some((p) => partyKey(p) === key)) return rotation.made ? [rotation.from, rotation.version] : [rotation.from];
  const appliedEverywhere = rotation.made && rotation.appliers.every((p) => rotation.applied.has(partyKey(p)));
  if (rotation.readers.some((p) => partyKey(p) === key)) return appliedEverywhere ? [rotation.version] : [rotation.from];
  return [rotation.from];
};
