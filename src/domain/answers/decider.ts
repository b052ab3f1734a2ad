import { z } from 'zod';
import { assignmentOf } from '../assignments/state.js';
import { knownContractField, knownContractFields } from '../catalogue/contracts.js';
import type { Decision } from '../decision.js';
import type { MeshState } from '../mesh/state.js';
import { refuseIfAny, type Problem } from '../refusal.js';
import { assignmentRef } from '../seats/events.js';
import { ConsumerAnswered, consumerAggregate } from './events.js';
import { assignmentAggregate } from '../assignments/events.js';
import { answerFor } from './state.js';
import { canonicalJson } from '../canonical.js';
import { decideRouteAnswer } from '../routes/grants.js';

/** `answer-consumer` with requirement `route:<name>`: the holder of mesh-proxy handing back a public name. */
export const ROUTE_ANSWER = 'route:';

export const answerConsumerSchema = z.strictObject({
  type: z.literal('answer-consumer'),
  provider: assignmentRef,
  consumer: assignmentRef,
  requirement: z.string(),
  values: z.record(z.string(), z.string()),
});
export type AnswerConsumer = z.infer<typeof answerConsumerSchema>;

/** A value a consumer's software is told, not a document. */
const VALUE_MAX = 1024;

/**
 * A provider's answer to one consumer's requirement: only the provider that answers it, only
 * fields of the contract, never a secret (that travels sealed, through the vault), never empty.
 */
export const decideAnswerConsumer = (command: AnswerConsumer, state: MeshState): Decision => {
  const { provider, consumer, requirement } = command;
  const subject = `${provider.node}/${provider.module} answering ${consumer.node}/${consumer.module}'s ${requirement}`;
  // ADR 0007: a route's public name is the proxy's answer to the name the route asks for.
  if (requirement.startsWith(ROUTE_ANSWER)) {
    const name = requirement.slice(ROUTE_ANSWER.length);
    const { events, problems, already } = decideRouteAnswer(state, { provider, consumer, name, values: command.values });
    refuseIfAny(subject, problems);
    const publicName = command.values.publicName ?? '';
    return {
      aggregate: assignmentAggregate(consumer.node, consumer.module),
      events,
      summary: already ? `${consumer.node}/${consumer.module}'s ${name} is already ${publicName}` : `${provider.node}/${provider.module} handed back ${publicName} for ${consumer.node}/${consumer.module}'s ${name}`,
    };
  }
  const problems: Problem[] = [];
  const assignment = assignmentOf(state.assignments, consumer);
  const resolution = assignment?.resolutions.find((r) => r.requirement === requirement);
  if (!assignment) problems.push({ what: `${consumer.node}/${consumer.module}`, why: 'no such assignment', remedy: 'answer a consumer that is assigned', missing: 'assignment' });
  else if (!resolution) problems.push({ what: requirement, why: `${consumer.module} has no requirement ${requirement}`, remedy: `its requirements: ${assignment.resolutions.map((r) => r.requirement).join(', ') || 'none'}` });
  else if (resolution.answer.kind !== 'assignment' || resolution.answer.node !== provider.node || resolution.answer.module !== provider.module) {
    const by = resolution.answer.kind === 'assignment' ? `${resolution.answer.node}/${resolution.answer.module}` : `the ${resolution.provider}`;
    problems.push({ what: `${provider.node}/${provider.module}`, why: `${consumer.node}/${consumer.module}'s ${requirement} is answered by ${by}, not by it`, remedy: `only ${by} answers it` });
  }
  const entries = Object.entries(command.values);
  if (entries.length === 0) problems.push({ what: 'values', why: 'an answer with no value tells the consumer nothing', remedy: 'give each field it derived: FIELD=VALUE' });
  const contract = resolution?.contract ?? '';
  const fields = knownContractFields(state, contract);
  for (const [field, value] of entries) {
    if (value.length === 0) problems.push({ what: field, why: 'an empty value: the consumer would be told nothing and take it as an answer', remedy: 'answer once the value is derived' });
    if (value.length > VALUE_MAX) problems.push({ what: field, why: `${value.length} characters, more than ${VALUE_MAX}: an answer is a value, not a document`, remedy: 'answer with a shorter value' });
    if (fields && !fields.includes(field)) problems.push({ what: field, why: `${contract} has no field ${field}`, remedy: `its fields: ${fields.join(', ')}` });
    if (knownContractField(state, contract, field)?.secret) problems.push({ what: field, why: `${field} is a secret field of ${contract}, and a secret never enters the log (ADR 0113)`, remedy: 'deliver it through the vault' });
  }
  refuseIfAny(subject, problems);
  // The same answer again (a provider answering on every pass, a retry) records nothing.
  const standing = answerFor(state.answers, consumer, requirement, provider)?.values;
  if (standing && canonicalJson(standing) === canonicalJson(command.values)) {
    return { aggregate: consumerAggregate(consumer, requirement), events: [], summary: `${consumer.node}/${consumer.module}'s ${requirement} is already answered so by ${provider.node}/${provider.module}` };
  }
  return {
    aggregate: consumerAggregate(consumer, requirement),
    events: [{ type: ConsumerAnswered.type, data: { provider, consumer, requirement, values: command.values } }],
    summary: `${provider.node}/${provider.module} answered ${consumer.node}/${consumer.module}'s ${requirement}: ${entries.map(([k]) => k).join(', ')}`,
  };
};
