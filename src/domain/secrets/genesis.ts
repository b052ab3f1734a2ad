import type { Decision } from '../decision.js';
import type { MeshState } from '../mesh/state.js';
import { holderOf, seatNamed } from '../seats/state.js';
import { Refusal } from '../refusal.js';
import { SecretFounded, SecretHandedOver, secretAggregate, type RotationParty } from './events.js';
import { secretNamed } from './state.js';

// The mesh's own secrets (docs/decisions.md, "The mesh's own first secrets"): genesis records each
// one it made and sealed — name, purpose, version and the keys it is sealed to, never its value —
// and the controller records that the holder of mesh-vault holds it once the vault said so. Neither
// is an operator's command: genesis and the controller state them, as the controller states facts.

/** Every name of the mesh's own starts so: no assignment resolves a secret under it. */
export const MESH_SECRET_PREFIX = 'mesh/';

export interface FoundSecret {
  secret: string;
  purpose: string;
  version: number;
  sealedTo: { name: string; key: string }[];
}

export const decideFoundSecret = (command: FoundSecret, state: MeshState): Decision => {
  const aggregate = secretAggregate(command.secret);
  const subject = `recording the mesh's own secret ${command.secret}`;
  if (!command.secret.startsWith(MESH_SECRET_PREFIX)) {
    throw new Refusal(subject, [{ what: command.secret, why: `the mesh's own secrets are named ${MESH_SECRET_PREFIX}…`, remedy: `name it ${MESH_SECRET_PREFIX}${command.secret}` }]);
  }
  const known = secretNamed(state.secrets, command.secret);
  if (known && known.origin !== 'genesis') {
    throw new Refusal(subject, [{ what: command.secret, why: `the log names ${command.secret} already, as a secret the vault made (seq ${known.seq})`, remedy: 'the mesh\'s own secrets are recorded at genesis, before any other' }]);
  }
  if (known) return { aggregate, events: [], summary: `the mesh's own secret ${command.secret} is recorded already` };
  return { aggregate, events: [{ type: SecretFounded.type, data: command }], summary: `the mesh's own secret ${command.secret}, sealed to ${command.sealedTo.map((s) => s.name).join(' and ')}` };
};

/** The holder of mesh-vault now: who the mesh's own secrets are handed to. */
export const vaultHolder = (state: MeshState): RotationParty | undefined => {
  const seat = seatNamed(state.seats, 'mesh-vault');
  const holder = seat ? holderOf(state.seats, seat.id, 'mesh') : undefined;
  return holder ? { node: holder.node, module: holder.module } : undefined;
};

/** The mesh's own secrets the vault holding mesh-vault now has not been handed. */
export const awaitingHandOver = (state: MeshState): { secret: string; purpose: string; version: number; vault: RotationParty }[] => {
  const vault = vaultHolder(state);
  if (!vault) return [];
  return [...state.secrets.byName.values()]
    .filter((s) => s.origin === 'genesis' && (s.handedOver?.node !== vault.node || s.handedOver.module !== vault.module))
    .map((s) => ({ secret: s.secret, purpose: s.purpose, version: s.version, vault }));
};

export const decideHandedOver = (state: MeshState, secret: string, version: number, vault: RotationParty): Decision => {
  const aggregate = secretAggregate(secret);
  const known = secretNamed(state.secrets, secret);
  if (known?.origin !== 'genesis') {
    throw new Refusal(`recording ${secret} handed to the vault`, [{ what: secret, why: 'it is not one of the mesh\'s own secrets: the vault made it', remedy: 'only what genesis made is handed over' }]);
  }
  if (known.version === version && known.handedOver?.node === vault.node && known.handedOver.module === vault.module) return { aggregate, events: [], summary: `${secret} is held by ${vault.node}/${vault.module} already` };
  return { aggregate, events: [{ type: SecretHandedOver.type, data: { secret, version, vault } }], summary: `${secret} handed to the vault, ${vault.node}/${vault.module}` };
};
