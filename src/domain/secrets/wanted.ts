import { allAssignments, answeredBy, type AssignmentState } from '../assignments/state.js';
import type { Resolution } from '../assignments/events.js';
import type { MeshState } from '../mesh/state.js';
import { manifestOf } from '../catalogue/state.js';
import { proxyHolder } from '../routes/grants.js';

// Which secrets the mesh needs now, and which nodes each goes to: derived from the assignments'
// resolutions, never declared by hand. A secret requirement goes to the node of the module that
// requires it; a provider's per-consumer secret (`<requirement>-secret`, named for the consumer)
// goes to the consumer's node, which presents it, and to the provider's node, which applies it
// (ADR 0113). A secret a module's route authenticates with goes to the node of mesh-proxy's holder
// too, which checks it (ADR 0108; the routes file names where it lands there).

export interface WantedSecret {
  secret: string;
  purpose: string;
  /** node names, sorted */
  recipients: string[];
  /** a provider's per-consumer secret: who applies it */
  provider?: { node: string; module: string; contract: string };
  /** who presents it (or, for a plain secret, who reads it) */
  consumer: { node: string; module: string; requirement: string };
  /** the holder of mesh-vault that answers it */
  vault: SecretAnswer['holder'];
}

type SecretAnswer = Extract<Resolution['answer'], { kind: 'secret' }>;

/** The provider that applies a per-consumer secret, when `resolution` is one. */
export const perConsumerProvider = (assignment: AssignmentState, resolution: Resolution & { answer: SecretAnswer }): { node: string; module: string; contract: string } | undefined => {
  if (!resolution.requirement.endsWith('-secret')) return undefined;
  const base = assignment.resolutions.find((r) => r.requirement === resolution.requirement.slice(0, -'-secret'.length));
  if (base?.answer.kind !== 'assignment') return undefined;
  if (resolution.answer.name !== `${base.contract}/${assignment.node}-${assignment.module}`) return undefined;
  return { node: base.answer.node, module: base.answer.module, contract: base.contract };
};

const isSecret = (resolution: Resolution): resolution is Resolution & { answer: SecretAnswer } => resolution.answer.kind === 'secret';

/** Every secret the assignments name, by name. */
export const wantedSecrets = (state: MeshState): Map<string, WantedSecret> => {
  const wanted = new Map<string, WantedSecret>();
  const proxy = proxyHolder(state);
  for (const assignment of allAssignments(state.assignments)) {
    const checkedByProxy = new Set((manifestOf(state.catalogue, assignment.module)?.routes ?? []).flatMap((route) => route.policy.flatMap((p) => (p.kind === 'authentication' ? [p.secret] : []))));
    for (const resolution of assignment.resolutions.filter(isSecret)) {
      const consumer = { node: assignment.node, module: assignment.module, requirement: resolution.requirement };
      const provider = perConsumerProvider(assignment, resolution);
      const recipients = [...new Set([assignment.node, ...(provider ? [provider.node] : []), ...(proxy && checkedByProxy.has(resolution.requirement) ? [proxy.node] : [])])].sort();
      const purpose = provider
        ? `the ${provider.contract} login of ${assignment.node}/${assignment.module} at ${provider.node}/${provider.module}`
        : `${resolution.requirement} of ${assignment.node}/${assignment.module}`;
      wanted.set(resolution.answer.name, { secret: resolution.answer.name, purpose, recipients, consumer, vault: resolution.answer.holder, ...(provider ? { provider } : {}) });
    }
  }
  return wanted;
};

/** The per-consumer secrets a provider applies: one for each consumer it answers that presents one. Costs what it finds. */
export const secretsAppliedBy = (state: MeshState, provider: { node: string; module: string }): { secret: string; consumer: { node: string; module: string }; contract: string; holder: SecretAnswer['holder'] }[] =>
  answeredBy(state.assignments, provider).flatMap((consumer) =>
    consumer.resolutions.filter(isSecret).flatMap((resolution) => {
      const applier = perConsumerProvider(consumer, resolution);
      return applier && applier.node === provider.node && applier.module === provider.module
        ? [{ secret: resolution.answer.name, consumer: { node: consumer.node, module: consumer.module }, contract: applier.contract, holder: resolution.answer.holder }]
        : [];
    }),
  );
