import { DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { chainProblem, GENESIS_PREV, linkOf } from '../adapters/eventlog/chain.js';
import { ChainReader, type PassedCommit } from '../adapters/eventlog/chain-reader.js';
import { decodeCommit } from '../adapters/eventlog/codec.js';
import { aggregateOf } from '../adapters/eventlog/subjects.js';
import { verifySignature } from '../adapters/operator-keys.js';
import type { EventRegistry } from '../domain/events/registry.js';
import { LogVoided } from '../domain/log/events.js';
import { MeshInitialised } from '../domain/mesh/events.js';
import { OperatorAdded, OperatorRevoked } from '../domain/operators/operators.js';
import type { MeshEvent, StoredMeshEvent } from '../domain/registry.js';

// `mesh audit verify`: the whole log read again from its first sequence and every commit checked:
//
// - the writer: its link to the commit before (Mesh-Prev) and its signature under the key the
//   genesis names — the first commit is the mesh's genesis, signed by that key and naming it in
//   its header and in `mesh.initialised` alike, and, when this machine holds a controller key, it
//   is that key. A commit a client put on the log by going around the controller fails here.
// - the envelope: it decodes exactly as readers decode it.
// - the operator's signature stored with it, against the key the log held for that operator at
//   that point (added before, not revoked before), in the form it was signed in (with what it was
//   signed for, or, before that was signed, without), signed to be carried out and not for a
//   plan, and that its events are that command's.
// - who added each operator: the first at genesis (while no operator exists, by the controller),
//   every later one by a command signed by an operator valid then, adding exactly that key.
//
// Nothing stops the walk: every failure is listed by sequence, the first named. A commit an
// operator voided is listed as voided, not failed: readers pass it by, and so does the audit —
// but it is never applied, so an operator it would have added is no operator.

export type VerifyFailureKind = 'genesis' | 'writer' | 'envelope' | 'signature' | 'operator' | 'void';

export interface VerifyFailure {
  seq: number;
  aggregate: string;
  /**
   * `genesis`: the first commit does not name, or is not signed by, the writer key (or not this
   * machine's); `writer`: not signed by that key, or not linked to the commit before;
   * `envelope`: it does not decode as readers decode it; `signature`: the stored operator signature
   * does not hold; `operator`: an operator added by no one who could; `void`: a void of a commit
   * that verifies
   */
  kind: VerifyFailureKind;
  why: string;
}

export interface VerifyReport {
  /** the log's head when the walk started: everything up to it was checked */
  head: number;
  commits: number;
  events: number;
  /** operator signatures checked */
  signatures: number;
  /** the key the genesis names: every commit must verify under it */
  writerKey: string | null;
  failures: VerifyFailure[];
  /** the first failure's sequence, if any */
  firstFailure: number | null;
  /** commits that do not verify but that an operator voided: readers pass them by */
  voided: PassedCommit[];
}

export interface VerifySource {
  stream: string;
  subjectPrefix: string;
  registry: EventRegistry<MeshEvent>;
  /** this machine's controller key (public half), when it has one: the genesis must name it */
  localKey?: { publicKey: string; from: string };
}

interface OperatorKeyAt {
  publicKey: string;
  revokedAt?: number;
}

export const verifyLog = async (nc: NatsConnection, source: VerifySource): Promise<VerifyReport> => {
  const jsm = jetstreamManager(nc);
  const head = (await (await jsm).streams.info(source.stream)).state.last_seq;
  const report: VerifyReport = { head, commits: 0, events: 0, signatures: 0, writerKey: null, failures: [], firstFailure: null, voided: [] };
  if (head === 0) return report;
  const chain = new ChainReader(jsm, jetstream(nc), source);
  const voids = await chain.voids();
  const operators = new Map<string, OperatorKeyAt>();
  let everAnOperator = false;
  let key: string | undefined;
  let before = GENESIS_PREV;
  const fail = (seq: number, aggregate: string, kind: VerifyFailureKind, why: string): void => void report.failures.push({ seq, aggregate, kind, why });

  // One commit, checked; never throws for what the commit holds.
  const walk = (message: JsMsg): void => {
    const aggregate = aggregateOf(source.subjectPrefix, message.subject);
    report.commits++;
    const link = linkOf({ seq: message.seq, subject: message.subject, data: message.data, headers: message.headers });
    let events: StoredMeshEvent[] | undefined;
    let unread: string | undefined;
    try {
      events = decodeCommit(source.registry, message.seq, aggregate, message.data);
    } catch (error) {
      unread = (error as Error).message;
    }

    const problems: { kind: VerifyFailureKind; why: string }[] = [];
    if (message.seq === 1) {
      key = genesisKey(link.key, events, source, problems);
      report.writerKey = key ?? null;
    }
    const writer = key === undefined ? (message.seq === 1 ? undefined : 'the genesis names no writer key to verify it under') : chainProblem(link, key, before);
    if (writer) problems.push({ kind: 'writer', why: writer });
    if (unread) problems.push({ kind: 'envelope', why: unread });
    before = link.hash;

    const voided = voids.get(message.seq);
    if (problems.length > 0 && voided) {
      // Passed by, as every reader passes it: listed, never applied.
      report.voided.push(voided);
      return;
    }
    for (const problem of problems) fail(message.seq, aggregate, problem.kind, problem.why);
    if (!events) return;
    report.events += events.length;
    const signed = events[0]?.signed;
    if (signed) {
      report.signatures++;
      const why = signatureProblem(events, operators, message.seq);
      if (why) fail(message.seq, aggregate, 'signature', why);
    }
    for (const event of events) {
      const why = operatorProblem(event, everAnOperator);
      if (why) fail(message.seq, aggregate, 'operator', why);
      if (event.type === LogVoided.type && !writer) {
        const voidedSeq = event.data.seq;
        if (voidedSeq < message.seq && !report.voided.some((v) => v.seq === voidedSeq) && !report.failures.some((f) => f.seq === voidedSeq)) {
          fail(message.seq, aggregate, 'void', `it voids seq ${voidedSeq}, which reads and verifies: a void is only for a commit readers are held at`);
        }
      }
    }
    // What an unverified commit says is not the mesh's: an operator it adds is no operator.
    if (problems.length === 0) {
      for (const event of events) everAnOperator = learnOperator(operators, event) || everAnOperator;
    }
  };

  const consumer = await jetstream(nc).consumers.get(source.stream, { filter_subjects: `${source.subjectPrefix}.>`, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 1 });
  const messages = await consumer.consume({ max_messages: 1024 });
  try {
    for await (const message of messages) {
      if (message.seq > head) break;
      walk(message);
      if (message.seq >= head) break;
    }
  } finally {
    messages.stop();
  }
  report.failures.sort((a, b) => a.seq - b.seq);
  report.firstFailure = report.failures[0]?.seq ?? null;
  return report;
};

/** The key the genesis names, after checking it names it in its header and its event alike, signs with it, and is this machine's. */
const genesisKey = (headerKey: string | undefined, events: StoredMeshEvent[] | undefined, source: VerifySource, problems: { kind: VerifyFailureKind; why: string }[]): string | undefined => {
  const genesis = events?.[0];
  const named = genesis?.type === MeshInitialised.type ? genesis.data.controllerKey : undefined;
  if (!headerKey) {
    problems.push({ kind: 'genesis', why: 'the first commit names no writer key (Mesh-Key): it was written before the log was signed, or not by a mesh writer, so no commit of this log can be verified' });
    return undefined;
  }
  if (genesis?.type !== MeshInitialised.type) problems.push({ kind: 'genesis', why: `the first commit is ${genesis?.type ?? 'unreadable'}, not the mesh's genesis (mesh.initialised)` });
  else if (named !== headerKey) problems.push({ kind: 'genesis', why: `mesh.initialised names controller key ${named ?? '(none)'}, but the commit is sealed for key ${headerKey}` });
  if (source.localKey && source.localKey.publicKey !== headerKey) {
    problems.push({ kind: 'genesis', why: `the genesis names controller key ${headerKey}, and this machine's controller key (${source.localKey.from}) is ${source.localKey.publicKey}: this log was not begun by this controller` });
  }
  return headerKey;
};

/** Remembers what an operator event says; true when it added an operator. */
const learnOperator = (operators: Map<string, OperatorKeyAt>, event: StoredMeshEvent): boolean => {
  if (event.type === OperatorAdded.type) {
    const data = event.data;
    if (!operators.has(data.operator)) operators.set(data.operator, { publicKey: data.publicKey });
    return true;
  }
  if (event.type === OperatorRevoked.type) {
    const known = operators.get(event.data.operator);
    if (known && known.revokedAt === undefined) known.revokedAt = event.seq;
  }
  return false;
};

/**
 * Why an operator event was not decided by someone who could, or undefined. The first operator is
 * added at genesis while there is none; every other change to the operators is an operator's
 * signed command for exactly that change (whose signature `signatureProblem` checks).
 */
const operatorProblem = (event: StoredMeshEvent, everAnOperator: boolean): string | undefined => {
  if (event.type !== OperatorAdded.type && event.type !== OperatorRevoked.type) return undefined;
  const data = event.data;
  const signed = event.signed;
  if (!signed) {
    if (event.type === OperatorAdded.type && !everAnOperator) return undefined;
    return `${event.type === OperatorAdded.type ? `operator ${data.operator} was added` : `operator ${data.operator} was revoked`} by no operator's signed command${event.type === OperatorAdded.type ? ', after the first operator: only the first is added at genesis' : ''}`;
  }
  // The command as it was signed, field by field: whatever it holds, only these are compared.
  const command = signed.command;
  const wanted = event.type === OperatorAdded.type ? 'add-operator' : 'revoke-operator';
  if (command.type !== wanted || command.operator !== data.operator || (event.type === OperatorAdded.type && command.publicKey !== event.data.publicKey)) {
    return `${event.type} of ${data.operator} is not what the signed command ${signed.commandId} of ${signed.operator} asked (${String(command.type ?? '?')} ${String(command.operator ?? '?')})`;
  }
  return undefined;
};

/** Why the signature stored with these events does not hold, or undefined when it does. */
const signatureProblem = (events: StoredMeshEvent[], operators: Map<string, OperatorKeyAt>, seq: number): string | undefined => {
  const signed = events[0]?.signed;
  if (!signed) return undefined;
  const operator = operators.get(signed.operator);
  if (!operator) return `signed by ${signed.operator}, who was not an operator at seq ${seq}`;
  if (operator.revokedAt !== undefined) return `signed by ${signed.operator}, revoked at seq ${operator.revokedAt}`;
  if (!verifySignature(signed, operator.publicKey)) return `the signature of ${signed.operator} does not match the stored command: it was altered, or signed with another key`;
  // A command signed before signatures said what they were for has no purpose, and verifies in that old form.
  if (signed.purpose === 'plan') return `the stored command ${signed.commandId} of ${signed.operator} was signed for a plan, which appends nothing: a plan's signature never carries a command out`;
  const strayed = events.find((event) => event.commandId !== signed.commandId || event.actor !== `operator:${signed.operator}`);
  if (strayed) return `event ${strayed.index} says command ${strayed.commandId} by ${strayed.actor}, but the signed command is ${signed.commandId} by operator:${signed.operator}`;
  return undefined;
};
