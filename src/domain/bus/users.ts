import { allAssignments } from '../assignments/state.js';
import { manifestOf } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { allEnrolmentTokens, allNodes } from '../nodes/state.js';
import { allOperators } from '../operators/state.js';
import { heldBy, seatById, seatNamed } from '../seats/state.js';
import { busIdentityToolSubject, requiresMeshBus } from './module-identity.js';
import { vaultToolSubject } from '../secrets/vault-wire.js';
import { consumedSubjects, eventSubject, foldSnapshotBucket, moduleConsumerName, moduleInbox, SEAT_HOLDERS_CONSUMER, seatStreamName } from './subjects.js';

// The bus's user list, composed from the log (design 25 §4, design 28, design 32 §2): one account,
// one user per identity, and each user's permissions derived from what is declared every time the
// list is written — never stored, never granted by hand. Nobody is granted `_INBOX.>`: every
// identity has an inbox prefix of its own, and the server refuses a subscription outside it.

export interface BusPermissions {
  publish: { allow: string[]; deny?: string[] };
  subscribe: { allow: string[] };
  /** may answer requests it received (a single reply to each); only identities that serve something */
  allowResponses: boolean;
}

export type PrincipalKind = 'controller' | 'snapshot-writer' | 'operator' | 'host' | 'enrolment' | 'module' | 'static';

export interface BusUser {
  kind: PrincipalKind;
  /** who it is, for people: `host alpha`, `module greeter on alpha` */
  name: string;
  /** base64 of the ed25519 public key; the server knows it as an nkey */
  publicKey: string;
  /** the inbox prefix this identity's connections use */
  inbox: string;
  permissions: BusPermissions;
}

/** The mesh's stream and subject names: `mesh`, `LOG`, … in production; tests use their own. */
export interface BusWire {
  prefix: string;
  logStream: string;
  logPrefix: string;
  nodesStream: string;
  controlStream: string;
  eventsStream: string;
}

export interface BusComposition {
  wire: BusWire;
  /** the controller's own public key: it is in the list whatever the log says */
  controllerKey: string;
  /** the key the controller writes the snapshots of its fold as (derived from its own): in the list whatever the log says */
  snapshotWriterKey: string;
  /** the public key of the bus user of a module assigned to a node, derived by the control plane */
  moduleKey: (node: string, module: string) => string;
  /** tokens past their expiry have no user; the composer takes the clock as an argument */
  now: Date;
  /** principals the server's administrator lists by hand (see docs/decisions.md); carried as they are */
  statics?: readonly BusUser[];
}

export const CONTROLLER_INBOX = '_INBOX.controller';
export const SNAPSHOT_WRITER_INBOX = '_INBOX.fold-snapshots';
export const hostInbox = (node: string): string => `_INBOX.host.${node}`;
export const personInbox = (operator: string): string => `_INBOX.person.${operator}`;
export const enrolmentInbox = (tokenId: string): string => `_INBOX.enrol.${tokenId}`;

const controllerSeat = (prefix: string): string => `${prefix}.seat.mesh-controller`;
export const enrolSubject = (prefix: string): string => `${controllerSeat(prefix)}.tool.enrol`;
/** A provider's own `answer-consumer`: the subject names who answers, and only that module's user may publish to it. */
export const providerAnswerSubject = (prefix: string, node: string, module: string): string => `${controllerSeat(prefix)}.tool.answer-consumer.${node}.${module}`;

/** What no identity may do to a stream, the controller included: the log is never deleted or purged. */
const DESTRUCTIVE = ['$JS.API.STREAM.DELETE.>', '$JS.API.STREAM.PURGE.>', '$JS.API.STREAM.MSG.DELETE.>'];

export const controllerUser = (wire: BusWire, publicKey: string): BusUser => ({
  kind: 'controller',
  name: 'controller',
  publicKey,
  inbox: CONTROLLER_INBOX,
  permissions: {
    publish: {
      allow: [
        // the log, declarations and the controller's own facts: only the controller says these
        `${wire.logPrefix}.>`,
        `${wire.prefix}.node.*.declare`,
        `${controllerSeat(wire.prefix)}.event.>`,
        // the writer lease: which controller process is the mesh's one writer (writer-lease.ts)
        `${wire.prefix}.controller.writer`,
        // the command ids it refused, spent while their commands could be fresh (refused-commands.ts)
        `${wire.prefix}.controller.refused.*`,
        // answers to whoever asked it. Not through allow_responses: a reload of the user list resets
        // the server's record of the replies it allows, so an answer in flight across a reload
        // would be refused; and the server keeps that record for every message delivered with a
        // reply subject — each JetStream delivery — which made the controller's reads of the log
        // several times slower. The controller may publish into any inbox; nobody may read another's.
        '_INBOX.>',
        // work the mesh's own flows submit to a seat (a build); the control plane may ask any tool
        `${wire.prefix}.seat.*.accept.>`,
        `${wire.prefix}.seat.*.tool.>`,
        `${wire.prefix}.mod.*.tool.>`,
        // the controller is the only writer of stream and consumer definitions (design 25 §3)
        '$JS.API.>',
        '$JS.ACK.>',
        '$JS.FC.>',
        // the artifact store's chunks and metadata
        '$O.>',
      ],
      deny: DESTRUCTIVE,
    },
    subscribe: {
      allow: [
        `${controllerSeat(wire.prefix)}.tool.>`,
        `${wire.prefix}.control.*.alive`,
        `${CONTROLLER_INBOX}.>`,
      ],
    },
    allowResponses: false,
  },
});

/**
 * The controller writing the snapshot of its fold: the one bucket, nothing else. Replacing the
 * snapshot purges the chunks of the one before, which is why this is not the controller's own
 * user — that one may purge no stream, and a deny outweighs any allow.
 */
/** The stream under the bucket the fold's snapshots are kept in. */
const snapshotStream = (wire: BusWire): string => `OBJ_${foldSnapshotBucket(wire.logStream)}`;

export const snapshotWriterUser = (wire: BusWire, publicKey: string): BusUser => {
  const bucket = foldSnapshotBucket(wire.logStream);
  const stream = snapshotStream(wire);
  return {
    kind: 'snapshot-writer',
    name: 'controller (fold snapshots)',
    publicKey,
    inbox: SNAPSHOT_WRITER_INBOX,
    permissions: {
      publish: {
        allow: [
          `$O.${bucket}.>`,
          '$JS.API.INFO',
          `$JS.API.STREAM.INFO.${stream}`,
          `$JS.API.STREAM.CREATE.${stream}`,
          `$JS.API.STREAM.MSG.GET.${stream}`,
          `$JS.API.STREAM.PURGE.${stream}`,
        ],
      },
      subscribe: { allow: [`${SNAPSHOT_WRITER_INBOX}.>`] },
      allowResponses: false,
    },
  };
};

const operatorUser = (wire: BusWire, operator: string, publicKey: string): BusUser => ({
  kind: 'operator',
  name: `operator ${operator}`,
  publicKey,
  inbox: personInbox(operator),
  permissions: {
    publish: {
      allow: [
        // the mesh's verbs, each signed again by the operator's key inside the request
        `${controllerSeat(wire.prefix)}.tool.>`,
        // reading the log and the declarations: never writing them; any stream's settings, so a
        // misnamed one is answered "does not exist" rather than refused
        '$JS.API.INFO',
        '$JS.API.STREAM.INFO.*',
        ...readStream(wire.logStream),
        ...readStream(wire.nodesStream),
        // the snapshot of the controller's fold, read to answer `--at SEQ` from it rather than from
        // seq 1: its chunks through an ordered push consumer (created unnamed, with flow control).
        // Never written: only the snapshot writer may put or purge it.
        ...readStream(snapshotStream(wire)),
        `$JS.API.CONSUMER.CREATE.${snapshotStream(wire)}`,
        `$JS.FC.${snapshotStream(wire)}.>`,
      ],
      // a provider's own answer is the provider's to give: an operator answers with the signed tool
      deny: [providerAnswerSubject(wire.prefix, '*', '*')],
    },
    subscribe: { allow: [`${personInbox(operator)}.>`] },
    // a person asks; a person never answers (design 25 §7)
    allowResponses: false,
  },
});

/** Reading a stream through ordered consumers and gets: create, pull, look, let go. */
const readStream = (stream: string): string[] => [
  `$JS.API.STREAM.INFO.${stream}`,
  `$JS.API.STREAM.MSG.GET.${stream}`,
  `$JS.API.DIRECT.GET.${stream}.>`,
  `$JS.API.CONSUMER.CREATE.${stream}.>`,
  `$JS.API.CONSUMER.INFO.${stream}.>`,
  `$JS.API.CONSUMER.DELETE.${stream}.>`,
  `$JS.API.CONSUMER.MSG.NEXT.${stream}.>`,
];

const hostUser = (wire: BusWire, node: string, publicKey: string): BusUser => ({
  kind: 'host',
  name: `host ${node}`,
  publicKey,
  inbox: hostInbox(node),
  permissions: {
    publish: {
      allow: [
        // its reports and heartbeats, and nothing of any other node's
        `${wire.prefix}.control.${node}.>`,
        // the newest declaration for itself alone, by subject (direct get, last by subject)
        `$JS.API.DIRECT.GET.${wire.nodesStream}.${wire.prefix}.node.${node}.declare`,
        // its modules' bus identities: the answer is sealed to the node that asked about, so asking
        // is no privilege (module-identity.ts)
        busIdentityToolSubject(wire.prefix),
        // the secrets its modules need: the request is signed by this host's key and the answer
        // sealed to the node, so asking is no privilege either (src/vault/vault.ts)
        vaultToolSubject(wire.prefix, 'fetch'),
      ],
    },
    subscribe: { allow: [`${wire.prefix}.node.${node}.declare`, `${hostInbox(node)}.>`] },
    allowResponses: false,
  },
});

const enrolmentUser = (wire: BusWire, tokenId: string, publicKey: string): BusUser => ({
  kind: 'enrolment',
  name: `enrolment token ${tokenId}`,
  publicKey,
  inbox: enrolmentInbox(tokenId),
  permissions: {
    publish: { allow: [enrolSubject(wire.prefix)] },
    subscribe: { allow: [`${enrolmentInbox(tokenId)}.>`] },
    allowResponses: false,
  },
});

/** One module on one node: exactly what its manifest declares, under its own name (design 32 §1–2). */
const moduleUser = (state: MeshState, wire: BusWire, node: string, module: string, publicKey: string): BusUser | undefined => {
  const manifest = manifestOf(state.catalogue, module);
  if (!manifest) return undefined;
  const publish = new Set<string>();
  const subscribe = new Set<string>();
  let serves = false;
  for (const event of manifest.emits) publish.add(eventSubject(wire.prefix, module, event));
  if (manifest.consumes.length > 0) {
    const consumer = moduleConsumerName(node, module);
    for (const subject of consumedSubjects(wire.prefix, manifest.consumes)) subscribe.add(subject);
    // its own durable consumer on EVENTS, made by the controller at assignment; its own acks only
    publish.add(`$JS.API.CONSUMER.INFO.${wire.eventsStream}.${consumer}`);
    publish.add(`$JS.API.CONSUMER.MSG.NEXT.${wire.eventsStream}.${consumer}`);
    publish.add(`$JS.ACK.${wire.eventsStream}.${consumer}.>`);
  }
  for (const tool of manifest.tools) {
    subscribe.add(`${wire.prefix}.mod.${module}.tool.${tool}`);
    serves = true;
  }
  for (const holding of heldBy(state.seats, { node, module })) {
    const seat = seatById(state.seats, holding.seat);
    if (!seat) continue;
    // a holder fully participates in its seat's namespace, and takes the seat's work from its queue
    publish.add(`${wire.prefix}.seat.${seat.name}.>`);
    subscribe.add(`${wire.prefix}.seat.${seat.name}.>`);
    if (seat.protocol.accepts.length > 0) {
      const stream = seatStreamName(wire.prefix, seat.name);
      publish.add(`$JS.API.CONSUMER.INFO.${stream}.${SEAT_HOLDERS_CONSUMER}`);
      publish.add(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${SEAT_HOLDERS_CONSUMER}`);
      publish.add(`$JS.ACK.${stream}.${SEAT_HOLDERS_CONSUMER}.>`);
    }
    // the vault takes make requests only from the controller the log began with: it reads that key from the log's first commit
    if (seat.name === 'mesh-vault') publish.add(`$JS.API.STREAM.MSG.GET.${wire.logStream}`);
    serves = true;
  }
  // a provider, or a seat's holder, answers its consumers as itself (answer-consumer; a route's public name)
  if (manifest.provides.length > 0 || heldBy(state.seats, { node, module }).length > 0) publish.add(providerAnswerSubject(wire.prefix, node, module));
  for (const used of manifest.uses) {
    // a user of a seat submits work to it, and nothing else (design 32 §2)
    const seat = seatNamed(state.seats, used);
    for (const accept of seat?.protocol.accepts ?? []) publish.add(`${wire.prefix}.seat.${seat?.name}.accept.${accept.verb}`);
  }
  subscribe.add(`${moduleInbox(module, node)}.>`);
  return {
    kind: 'module',
    name: `module ${module} on ${node}`,
    publicKey,
    inbox: moduleInbox(module, node),
    permissions: { publish: { allow: [...publish].sort() }, subscribe: { allow: [...subscribe].sort() }, allowResponses: serves },
  };
};

/** Every user the server should know now, in a stable order: the same log gives the same list. */
export const composeBusUsers = (state: MeshState, composition: BusComposition): BusUser[] => {
  const { wire } = composition;
  const users: BusUser[] = [controllerUser(wire, composition.controllerKey), snapshotWriterUser(wire, composition.snapshotWriterKey)];
  for (const operator of [...allOperators(state.operators)].sort((a, b) => a.operator.localeCompare(b.operator))) {
    if (!operator.revoked) users.push(operatorUser(wire, operator.operator, operator.publicKey));
  }
  for (const node of [...allNodes(state.nodes)].sort((a, b) => a.name.localeCompare(b.name))) {
    if (node.busKey) users.push(hostUser(wire, node.name, node.busKey));
  }
  for (const token of [...allEnrolmentTokens(state.nodes)].sort((a, b) => a.tokenId.localeCompare(b.tokenId))) {
    // Spent or not, a token's user lives until the token expires: the machine that spent it may
    // not have heard the answer (a reload closes nothing of its, but a network may), and asks
    // again; the enrol tool answers that machine alone and refuses everyone else.
    const live = Date.parse(token.expiresAt) > composition.now.getTime();
    if (live && token.publicKey && token.retiredWith === undefined) users.push(enrolmentUser(wire, token.tokenId, token.publicKey));
  }
  const byKey = (a: { node: string; module: string }, b: { node: string; module: string }): number => {
    const left = `${a.node}/${a.module}`;
    const right = `${b.node}/${b.module}`;
    return left < right ? -1 : left > right ? 1 : 0;
  };
  for (const assignment of [...allAssignments(state.assignments)].sort(byKey)) {
    if (!requiresMeshBus(state, assignment.module)) continue;
    const user = moduleUser(state, wire, assignment.node, assignment.module, composition.moduleKey(assignment.node, assignment.module));
    if (user) users.push(user);
  }
  users.push(...(composition.statics ?? []));
  return users;
};

/** When the list next changes by itself (a token expiring), or undefined. */
export const nextTokenExpiry = (state: MeshState, now: Date): Date | undefined => {
  let next: number | undefined;
  for (const token of allEnrolmentTokens(state.nodes)) {
    const at = Date.parse(token.expiresAt);
    if (token.publicKey && at > now.getTime() && (next === undefined || at < next)) next = at;
  }
  return next === undefined ? undefined : new Date(next);
};

/**
 * The event types that can change the user list: who may speak (operators, enrolled hosts, live
 * tokens) and what each module on the bus may say (its assignment, its definition, the seats it
 * holds or uses). Any other event (a fact, a build, a refusal stated) leaves the list as it was.
 */
export const BUS_USER_EVENT_TYPES: ReadonlySet<string> = new Set([
  'operator.added',
  'operator.revoked',
  'node.added',
  'node.enrolled',
  'node.removed',
  'enrolment.token-issued',
  'assignment.created',
  'assignment.removed',
  'module.registered',
  'seat.defined',
  'seat.renamed',
  'seat.held',
  'seat.handed-over',
  'seat.released',
]);
