import { z } from 'zod';
import { isAssigned } from '../assignments/state.js';
import { manifestOf } from '../catalogue/state.js';
import type { Decision } from '../decision.js';
import type { Declaration } from '../declarations/declaration.js';
import type { MeshState } from '../mesh/state.js';
import { refuseIfAny, Refusal, type Problem } from '../refusal.js';
import type { Report } from '../reports/report.js';
import {
  SecretRotationAbandoned,
  SecretRotationApplied,
  SecretRotationConfirmed,
  SecretRotationMade,
  SecretRotationRetired,
  SecretRotationReverted,
  SecretRotationStarted,
  secretAggregate,
  type RotationParty,
} from './events.js';
import { partyKey, readersHandedNew, rotationStep, secretNamed, type Rotation, type SecretState } from './state.js';
import { wantedSecrets } from './wanted.js';

// A secret's rotation (docs/decisions.md, "Rotating a secret"): an operator starts or abandons it;
// the controller states each step the vault or a party's report shows — made, applied, confirmed,
// retired — against the fold, so each is stated once however often it is judged.

export const rotateSecretSchema = z.strictObject({ type: z.literal('rotate-secret'), secret: z.string().min(1) });
export type RotateSecret = z.infer<typeof rotateSecretSchema>;

export const abandonRotationSchema = z.strictObject({ type: z.literal('abandon-secret-rotation'), secret: z.string().min(1), reason: z.string().default('abandoned by an operator') });
export type AbandonRotation = z.infer<typeof abandonRotationSchema>;

const knownSecret = (subject: string, state: MeshState, name: string): SecretState => {
  const secret = secretNamed(state.secrets, name);
  if (!secret) {
    throw new Refusal(subject, [
      {
        what: name,
        why: 'no such secret: the log names no secret by that name (the controller\'s and operators\' keys and the bus identities are keys, outside the vault; the PostgreSQL roles\' passwords are the mesh\'s own, named mesh/postgres-…)',
        remedy: 'mesh secret status lists the secrets the log names',
        missing: 'secret',
      },
    ]);
  }
  return secret;
};

/** Whom a rotation waits on now: `the vault`, or its parties. */
const describeWaitsOn = (rotation: Rotation): string => {
  const { waitsOn } = rotationStep(rotation);
  return waitsOn === 'vault' ? 'the vault' : waitsOn.map(partyKey).join(', ');
};

export const describeStep = (rotation: Rotation): string => `${rotationStep(rotation).step} version ${rotation.version}, waiting on ${describeWaitsOn(rotation)}`;

export const decideRotateSecret = (command: RotateSecret, state: MeshState): Decision => {
  const subject = `rotating secret ${command.secret}`;
  const secret = knownSecret(subject, state, command.secret);
  const problems: Problem[] = [];
  if (secret.origin === 'genesis') {
    throw new Refusal(subject, [
      {
        what: command.secret,
        why: `${command.secret} is the mesh's own (made at genesis, sealed to ${secret.recipients.join(' and ')}): the processes that log in with it read it from the files genesis wrote, and the mesh does not change it under them yet`,
        remedy: 'it keeps its value; the vault holds it once handed over (mesh secret status)',
      },
    ]);
  }
  if (secret.rotation) {
    problems.push({ what: command.secret, why: `a rotation of ${command.secret} is under way (${describeStep(secret.rotation)})`, remedy: `wait for it (mesh secret status), or give it up: mesh secret rotate ${command.secret} --abandon` });
    refuseIfAny(subject, problems);
  }
  const wanted = wantedSecrets(state).get(command.secret);
  if (!wanted) problems.push({ what: command.secret, why: 'no assignment uses it now: nobody holds it to apply or confirm a new value', remedy: 'it is made afresh when a module requires it again' });
  else {
    if (wanted.provider) {
      const provides = manifestOf(state.catalogue, wanted.provider.module)?.provides.find((p) => p.provision === wanted.provider?.contract);
      if (provides?.rotation !== 'two-credentials') {
        problems.push({
          what: command.secret,
          why: `its provider ${wanted.provider.node}/${wanted.provider.module} keeps one credential per consumer (its ${wanted.provider.contract} does not say "rotation": "two-credentials"): changing it would leave ${wanted.consumer.node}/${wanted.consumer.module} without a working credential until it read the new one`,
          remedy: `a provider that takes two credentials at once says so in its manifest (provides[].rotation: "two-credentials"); until then the secret keeps its value`,
        });
      }
    }
    const holder = wanted.vault;
    if (!isAssigned(state.assignments, holder)) problems.push({ what: command.secret, why: `its vault ${holder.node}/${holder.module} is not assigned: nobody could make the new value`, remedy: 'assign the holder of mesh-vault first' });
  }
  refuseIfAny(subject, problems);
  const consumer: RotationParty = { node: wanted!.consumer.node, module: wanted!.consumer.module };
  const provider = wanted!.provider;
  const two = provider !== undefined;
  const data = {
    secret: command.secret,
    from: secret.version,
    version: secret.highest + 1,
    parties: two ? ('two' as const) : ('one' as const),
    appliers: two ? [{ node: provider.node, module: provider.module }] : [consumer],
    readers: two ? [consumer] : [],
  };
  const whom = two ? `${partyKey(data.appliers[0]!)} applies both, then ${partyKey(consumer)} reads the new one` : `${partyKey(consumer)} stages it beside the current one`;
  return { aggregate: secretAggregate(command.secret), events: [{ type: SecretRotationStarted.type, data }], summary: `rotation of ${command.secret} started: version ${data.version} replaces ${data.from} once the vault made it; ${whom}` };
};

export const decideAbandonRotation = (command: AbandonRotation, state: MeshState): Decision => {
  const subject = `abandoning the rotation of ${command.secret}`;
  const secret = knownSecret(subject, state, command.secret);
  if (!secret.rotation) {
    throw new Refusal(subject, [{ what: command.secret, why: `no rotation of ${command.secret} is under way: it is at version ${secret.version}`, remedy: `mesh secret status shows each secret's rotation` }]);
  }
  const rotation = secret.rotation;
  const { version, from } = rotation;
  const readers = rotation.readers.map(partyKey).join(', ');
  const summary = rotation.abandoned
    ? `rotation of ${command.secret} ended while it unwound: version ${version} is dropped now, though ${describeWaitsOn(rotation)} has not said it runs with version ${from} again`
    : readersHandedNew(rotation)
      ? `rotation of ${command.secret} abandoned: ${readers} go back to version ${from}, and version ${version} is dropped once they have; it is never used again`
      : `rotation of ${command.secret} abandoned: version ${from} stays current, version ${version} is never used again`;
  return { aggregate: secretAggregate(command.secret), events: [{ type: SecretRotationAbandoned.type, data: { secret: command.secret, version, reason: command.reason } }], summary };
};

/** The vault holds the new version: stated once, while the rotation waits for it. */
export const decideRotationMade = (state: MeshState, name: string, version: number): Decision => {
  const rotation = secretNamed(state.secrets, name)?.rotation;
  const events = rotation?.version === version && !rotation.made ? [{ type: SecretRotationMade.type, data: { secret: name, version } }] : [];
  return { aggregate: secretAggregate(name), events, summary: `the vault made version ${version} of ${name}` };
};

/**
 * A party no longer assigned where the rotation found it can never apply, confirm or go back: the
 * rotation is given up, naming it. A gone reader leaves nobody to unwind for, so a rotation whose
 * readers were handed the new value ends at once (abandoned, then abandoned again, as an operator
 * would); a gone applier leaves the readers to go back first.
 */
export const decideRotationPartiesGone = (state: MeshState, name: string, version: number): Decision => {
  const rotation = secretNamed(state.secrets, name)?.rotation;
  const gone = rotation?.version === version ? [...rotation.appliers, ...rotation.readers].filter((p) => !isAssigned(state.assignments, p)) : [];
  if (!rotation || gone.length === 0) return { aggregate: secretAggregate(name), events: [], summary: `every party of the rotation of ${name} is assigned` };
  const reason = `${gone.map(partyKey).join(' and ')} ${gone.length === 1 ? 'is' : 'are'} no longer assigned where the rotation found ${gone.length === 1 ? 'it' : 'them'}`;
  const readerGone = gone.some((p) => rotation.readers.some((r) => partyKey(r) === partyKey(p)));
  const twice = !rotation.abandoned && readersHandedNew(rotation) && readerGone;
  const abandoned = { type: SecretRotationAbandoned.type, data: { secret: name, version, reason } };
  return { aggregate: secretAggregate(name), events: twice ? [abandoned, abandoned] : [abandoned], summary: `rotation of ${name} given up: ${reason}` };
};

/** Every party done and the vault holds the new version alone: the old one retired. */
export const decideRotationRetired = (state: MeshState, name: string, version: number): Decision => {
  const rotation = secretNamed(state.secrets, name)?.rotation;
  const events = rotation?.version === version && rotationStep(rotation).step === 'retiring' ? [{ type: SecretRotationRetired.type, data: { secret: name, version, retired: rotation.from } }] : [];
  return { aggregate: secretAggregate(name), events, summary: `version ${rotation?.from ?? '?'} of ${name} retired` };
};

/**
 * What one report shows of the rotations it takes part in: an applier runs with both versions
 * placed (applied), a reader with the new one alone (confirmed). Read from the declaration the
 * report answers — what it placed — and the report — that the secret's resource applied and the
 * module runs (all its resources applied, its ensure step included). One decision per secret.
 */
export const deriveRotationSteps = (state: MeshState, declaration: Declaration, report: Report): Decision[] => {
  if (report.refusal !== null) return [];
  const applied = new Set(report.resources.filter((r) => r.outcome === 'applied').map((r) => r.key));
  const running = new Set(report.running.map((r) => r.module));
  const decisions: Decision[] = [];
  for (const assignment of declaration.assignments) {
    if (!running.has(assignment.module)) continue;
    const party = { node: report.node, module: assignment.module };
    for (const resource of assignment.resources) {
      if (resource.kind !== 'secret' || !applied.has(resource.key) || !resource.versions) continue;
      const rotation = secretNamed(state.secrets, resource.secret)?.rotation;
      if (!rotation || !rotation.made) continue;
      const where = { secret: resource.secret, version: rotation.version, node: party.node, module: party.module, declarationSequence: declaration.sequence };
      const isApplier = rotation.appliers.some((p) => partyKey(p) === partyKey(party));
      const isReader = rotation.readers.some((p) => partyKey(p) === partyKey(party));
      const [first, second] = resource.versions;
      if (rotation.abandoned) {
        if (isReader && first === rotation.from && second === undefined && !rotation.reverted?.has(partyKey(party))) {
          decisions.push({ aggregate: secretAggregate(resource.secret), events: [{ type: SecretRotationReverted.type, data: where }], summary: `${partyKey(party)} runs with version ${rotation.from} of ${resource.secret} again` });
        }
        continue;
      }
      if (isApplier && first === rotation.from && second === rotation.version && !rotation.applied.has(partyKey(party))) {
        decisions.push({ aggregate: secretAggregate(resource.secret), events: [{ type: SecretRotationApplied.type, data: where }], summary: `${partyKey(party)} holds both versions of ${resource.secret}` });
      } else if (isReader && first === rotation.version && second === undefined && !rotation.confirmed.has(partyKey(party))) {
        decisions.push({ aggregate: secretAggregate(resource.secret), events: [{ type: SecretRotationConfirmed.type, data: where }], summary: `${partyKey(party)} runs with version ${rotation.version} of ${resource.secret}` });
      }
    }
  }
  return decisions;
};
