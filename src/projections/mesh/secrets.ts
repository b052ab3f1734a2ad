import type { RotationParty } from '../../domain/secrets/events.js';
import { rotationStep, secretAfterRotationEvent, type Rotation, type RotationStep } from '../../domain/secrets/state.js';
import type { StoredMeshEvent } from '../../domain/registry.js';
import type { StoredEventOf } from '../../domain/slice.js';
import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { RowImage } from './rows.js';

// `secrets`, as the secrets slice folds secret.made (a version, stated afresh), secret.shared (the
// same version, other recipients), a rotation's steps (docs/decisions.md, "Rotating a secret"), and
// the mesh's own: secret.founded at genesis, secret.handed-over once the vault keeps it.

/** A rotation as the row keeps it: the sets of parties done as lists. */
type RotationRow = Omit<Rotation, 'applied' | 'confirmed' | 'reverted'> & { applied: string[]; confirmed: string[]; reverted?: string[] };

type SecretRow = { name: string; purpose: string; version: number; recipients: string[]; changed_seq: number | string; highest: number; rotation: RotationRow | null; origin: 'vault' | 'genesis'; handed_over: RotationParty | null };

const TYPES = ['secret.made', 'secret.shared', 'secret.founded', 'secret.handed-over', 'secret.rotation-started', 'secret.rotation-made', 'secret.rotation-applied', 'secret.rotation-confirmed', 'secret.rotation-retired', 'secret.rotation-abandoned', 'secret.rotation-reverted'] as const;
type SecretEvent = StoredEventOf<(typeof TYPES)[number]>;
const isSecretEvent = (event: StoredMeshEvent): event is SecretEvent => (TYPES as readonly string[]).includes(event.type);

export const secretsProjection = foldingProjection<RowImage<SecretRow>>({
  name: 'secrets',
  version: 4,
  types: [...TYPES],
  open: async (events, tx) => {
    const secrets = new RowImage<SecretRow>('secrets', ['name']);
    await secrets.load(tx, events.flatMap((e) => (isSecretEvent(e) ? [{ name: e.data.secret }] : [])));
    return secrets;
  },
  apply: (secrets, event) => {
    if (!isSecretEvent(event)) return;
    const known = secrets.get({ name: event.data.secret });
    const seq = event.seq;
    switch (event.type) {
      case 'secret.made':
        secrets.set({ name: event.data.secret, purpose: event.data.purpose, version: event.data.version, recipients: event.data.recipients, changed_seq: seq, highest: Math.max(known?.highest ?? 0, event.data.version), rotation: known?.rotation ?? null, origin: 'vault', handed_over: null });
        return;
      case 'secret.founded':
        if (!known) secrets.set({ name: event.data.secret, purpose: event.data.purpose, version: event.data.version, recipients: event.data.sealedTo.map((s) => s.name), changed_seq: seq, highest: event.data.version, rotation: null, origin: 'genesis', handed_over: null });
        return;
      case 'secret.handed-over':
        if (known?.origin === 'genesis' && known.version === event.data.version) secrets.set({ ...known, handed_over: event.data.vault, changed_seq: seq });
        return;
      case 'secret.shared':
        if (known && known.version === event.data.version) secrets.set({ ...known, recipients: event.data.recipients, changed_seq: seq });
        return;
      // The fold's own rules, on the row's lists.
      case 'secret.rotation-started':
      case 'secret.rotation-made':
      case 'secret.rotation-applied':
      case 'secret.rotation-confirmed':
      case 'secret.rotation-retired':
      case 'secret.rotation-abandoned':
      case 'secret.rotation-reverted': {
        const next = known && secretAfterRotationEvent(known, known.rotation && rotationOfRow(known.rotation), event);
        if (next) secrets.set({ ...next, rotation: rowOfRotation(next.rotation), changed_seq: seq });
        return;
      }
    }
  },
  save: (secrets, tx) => secrets.save(tx),
});

export interface SecretRotationRead {
  from: number;
  version: number;
  parties: 'two' | 'one';
  appliers: RotationParty[];
  readers: RotationParty[];
  /** where it stands and whom it waits on */
  step: RotationStep['step'];
  waitsOn: 'vault' | RotationParty[];
  startedSeq: number;
}

export interface SecretRead {
  secret: string;
  purpose: string;
  version: number;
  recipients: string[];
  /** the log sequence of its last change */
  seq: number;
  rotation: SecretRotationRead | null;
  /** `vault`: the vault made it for an assignment; `genesis`: the mesh's own, sealed at genesis */
  origin: 'vault' | 'genesis';
  /** whether the vault holds it: always for what it made; the mesh's own once handed over */
  inVault: boolean;
  /** the mesh's own: the holder of mesh-vault it was handed to */
  handedOver?: RotationParty;
}

const rotationOfRow = ({ reverted, ...row }: RotationRow): Rotation => ({ ...row, applied: new Set(row.applied), confirmed: new Set(row.confirmed), ...(reverted ? { reverted: new Set(reverted) } : {}) });

const rowOfRotation = (rotation: Rotation | null): RotationRow | null => {
  if (!rotation) return null;
  const { applied, confirmed, reverted, ...rest } = rotation;
  return { ...rest, applied: [...applied], confirmed: [...confirmed], ...(reverted ? { reverted: [...reverted] } : {}) };
};

const rotationRead = (row: RotationRow | null): SecretRotationRead | null => {
  if (!row) return null;
  const rotation = rotationOfRow(row);
  const { step, waitsOn } = rotationStep(rotation);
  return { from: row.from, version: row.version, parties: row.parties, appliers: row.appliers, readers: row.readers, step, waitsOn, startedSeq: row.startedSeq };
};

/** Every secret the log names, by name: what it is for, its version, the nodes it goes to, its rotation. */
export const readSecrets = async ({ db, view }: ReadViews): Promise<SecretRead[]> =>
  (
    await db.query<{ name: string; purpose: string; version: number; recipients: string[]; changed_seq: string; rotation: RotationRow | null; origin: 'vault' | 'genesis'; handed_over: RotationParty | null }>(
      `SELECT name, purpose, version, recipients, changed_seq, rotation, origin, handed_over FROM ${view('secrets')} ORDER BY name`,
    )
  ).rows.map((r) => ({
    secret: r.name,
    purpose: r.purpose,
    version: r.version,
    recipients: r.recipients,
    seq: Number(r.changed_seq),
    rotation: rotationRead(r.rotation),
    origin: r.origin,
    inVault: r.origin === 'vault' || r.handed_over !== null,
    ...(r.handed_over ? { handedOver: r.handed_over } : {}),
  }));
