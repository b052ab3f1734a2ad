import type { Logger } from 'pino';
import type { Problem } from '../domain/refusal.js';

// Who speaks is the connection's identity, never the body (DESIGN.md; Kubernetes' Node authorizer
// takes the node from the client certificate, not from the object it writes). Every message the
// controller acts on has a speaker the wire vouches for — the subject only that identity may
// publish on (src/domain/bus/users.ts), or a signature checked — and a body that names anyone else
// is refused here, with a finding that names the identity that tried and what it claimed.
//
// The finding is a warning in the log and a counter (`mesh_impersonation_refused_total{entry,
// identity}`), never a commit: a hostile node must not be able to grow the permanent log through
// its refusals (docs/decisions.md, "Each identity speaks only for itself").

/** Where a message enters the control plane (or a seat holder serving the mesh, as the vault does). */
export type SpeakerEntry = 'report' | 'heartbeat' | 'answer-consumer' | 'enrol' | 'bus-identity' | 'tool' | 'vault-fetch';

export interface ImpersonationMetrics {
  /** `identity` is who the wire says spoke: `host beta`, `operator ada`, `enrolment token 00ab…` */
  impersonationRefused(entry: SpeakerEntry, identity: string): void;
}

/** Where a finding goes: the component's logger, and the counter when the process keeps one. */
export interface SpeakerFindings {
  logger: Logger;
  /** a port that counts other things too may leave this out (the report ingester's metrics in a test) */
  metrics?: Partial<ImpersonationMetrics> | undefined;
}

export interface Impersonation {
  entry: SpeakerEntry;
  /** who spoke, as the wire vouches for it */
  identity: string;
  /** whom the body named instead */
  claimed: string;
  /** the field of the body that named them */
  field: string;
}

/** The finding made, and the problem a refusal answers with. Nothing the body asked for is done. */
export const refuseImpersonation = (findings: SpeakerFindings | undefined, found: Impersonation): Problem => {
  findings?.logger.warn({ entry: found.entry, identity: found.identity, claimed: found.claimed, field: found.field }, `impersonation refused: ${found.identity} sent a ${found.entry} naming ${found.claimed}; nothing it asked for was done`);
  findings?.metrics?.impersonationRefused?.(found.entry, found.identity);
  return {
    what: found.field,
    why: `${found.identity} speaks only for itself, and this ${found.entry} names ${found.claimed}: who speaks is the connection's identity, never the body`,
    remedy: `a ${found.entry} from ${found.identity} names ${found.identity} alone; ${found.claimed} speaks for itself over its own connection`,
  };
};

/**
 * The node a control subject is from: `<prefix>.control.<node>.report` or `.alive`. Only host
 * `<node>` may publish `<prefix>.control.<node>.>` (users.ts hostUser; the controller, operators and
 * modules may not), so the subject is that host speaking, as the server vouches for it.
 */
export const nodeOfControlSubject = (subject: string, prefix: string, kind: 'report' | 'alive'): string | undefined => {
  const head = `${prefix}.control.`;
  const tail = `.${kind}`;
  if (!subject.startsWith(head) || !subject.endsWith(tail)) return undefined;
  const node = subject.slice(head.length, subject.length - tail.length);
  return node.length > 0 && !node.includes('.') ? node : undefined;
};

/** Who a request's answer goes to, from its reply subject's inbox prefix (users.ts: hostInbox, personInbox, enrolmentInbox, CONTROLLER_INBOX). */
export type ReplySpeaker = { kind: 'host'; node: string } | { kind: 'operator'; operator: string } | { kind: 'enrolment'; tokenId: string } | { kind: 'controller' };

/**
 * The identity a request/reply tool's caller reads its answer as. On a bus whose users the mesh
 * composes, each identity may subscribe only under its own inbox prefix, so the answer reaches that
 * identity and nobody else. The server does not check the reply subject a request names: a caller
 * may name another's inbox, but then it never reads the answer — so comparing the body with the
 * reply's owner is the check for a tool whose worth is its answer (bus-identity, vault fetch), and
 * each tool with an effect has its own authority besides (a token's secret, an operator's
 * signature). Undefined for any other inbox (the harness's `_INBOX.admin`, a module's, an unnamed
 * connection's on a bus with no users): not a principal whose claims a body could contradict.
 */
export const speakerOfReply = (reply: string | undefined): ReplySpeaker | undefined => {
  const parts = reply?.split('.') ?? [];
  if (parts[0] !== '_INBOX') return undefined;
  const [, kind, name] = parts;
  if (kind === 'controller') return { kind: 'controller' };
  if (!name || parts.length < 4) return undefined;
  if (kind === 'host') return { kind: 'host', node: name };
  if (kind === 'person') return { kind: 'operator', operator: name };
  if (kind === 'enrol') return { kind: 'enrolment', tokenId: name };
  return undefined;
};

export const describeSpeaker = (speaker: ReplySpeaker): string => {
  switch (speaker.kind) {
    case 'host':
      return `host ${speaker.node}`;
    case 'operator':
      return `operator ${speaker.operator}`;
    case 'enrolment':
      return `enrolment token ${speaker.tokenId}`;
    case 'controller':
      return 'controller';
  }
};
