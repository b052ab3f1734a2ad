import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { decodeCommit } from '../adapters/eventlog/codec.js';
import { aggregateOf } from '../adapters/eventlog/subjects.js';
import { verifySignature } from '../adapters/operator-keys.js';
import type { StoredEvent } from '../domain/events/envelope.js';
import type { EventRegistry } from '../domain/events/registry.js';
import { OperatorAdded, OperatorRevoked } from '../domain/operators/operators.js';

// `mesh audit verify`: every commit in the log read again from the first sequence, exactly as
// readers decode it, and every operator signature stored with a commit checked against the key
// the log held for that operator at that point — a signature made after a revocation, or before
// the operator was added, fails even though the key is right. Nothing stops the walk: each
// failure is reported with its sequence and the walk goes on to the head as it was at the start.

export interface VerifyFailure {
  seq: number;
  aggregate: string;
  /** `envelope`: it does not decode as readers decode it; `signature`: the stored operator signature does not hold */
  kind: 'envelope' | 'signature';
  why: string;
}

export interface VerifyReport {
  /** the log's head when the walk started: everything up to it was checked */
  head: number;
  commits: number;
  events: number;
  signatures: number;
  failures: VerifyFailure[];
}

interface OperatorKeyAt {
  publicKey: string;
  revokedAt?: number;
}

export const verifyLog = async (nc: NatsConnection, source: { stream: string; subjectPrefix: string; registry: EventRegistry }): Promise<VerifyReport> => {
  const jsm = await jetstreamManager(nc);
  const head = (await jsm.streams.info(source.stream)).state.last_seq;
  const report: VerifyReport = { head, commits: 0, events: 0, signatures: 0, failures: [] };
  if (head === 0) return report;
  const operators = new Map<string, OperatorKeyAt>();
  const consumer = await jetstream(nc).consumers.get(source.stream, { filter_subjects: `${source.subjectPrefix}.>`, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 1 });
  const messages = await consumer.consume({ max_messages: 1024 });
  try {
    for await (const message of messages) {
      if (message.seq > head) break;
      const aggregate = aggregateOf(source.subjectPrefix, message.subject);
      report.commits++;
      let events: StoredEvent[] | undefined;
      try {
        events = decodeCommit(source.registry, message.seq, aggregate, message.data);
      } catch (error) {
        report.failures.push({ seq: message.seq, aggregate, kind: 'envelope', why: (error as Error).message });
      }
      if (events) {
        report.events += events.length;
        const signed = events[0]?.signed;
        if (signed) {
          report.signatures++;
          const why = signatureProblem(events, operators, message.seq);
          if (why) report.failures.push({ seq: message.seq, aggregate, kind: 'signature', why });
        }
        for (const event of events) learnOperator(operators, event);
      }
      if (message.seq >= head) break;
    }
  } finally {
    messages.stop();
  }
  return report;
};

const learnOperator = (operators: Map<string, OperatorKeyAt>, event: StoredEvent): void => {
  if (event.type === OperatorAdded.type) {
    const data = event.data as { operator: string; publicKey: string };
    if (!operators.has(data.operator)) operators.set(data.operator, { publicKey: data.publicKey });
  } else if (event.type === OperatorRevoked.type) {
    const known = operators.get((event.data as { operator: string }).operator);
    if (known && known.revokedAt === undefined) known.revokedAt = event.seq;
  }
};

/** Why the signature stored with these events does not hold, or undefined when it does. */
const signatureProblem = (events: StoredEvent[], operators: Map<string, OperatorKeyAt>, seq: number): string | undefined => {
  const signed = events[0]?.signed;
  if (!signed) return undefined;
  const operator = operators.get(signed.operator);
  if (!operator) return `signed by ${signed.operator}, who was not an operator at seq ${seq}`;
  if (operator.revokedAt !== undefined) return `signed by ${signed.operator}, revoked at seq ${operator.revokedAt}`;
  if (!verifySignature(signed, operator.publicKey)) return `the signature of ${signed.operator} does not match the stored command: it was altered, or signed with another key`;
  const strayed = events.find((event) => event.commandId !== signed.commandId || event.actor !== `operator:${signed.operator}`);
  if (strayed) return `event ${strayed.index} says command ${strayed.commandId} by ${strayed.actor}, but the signed command is ${signed.commandId} by operator:${signed.operator}`;
  return undefined;
};
