import { JetStreamApiError, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { ComposedDeclaration } from '../domain/declarations/compose.js';
import { declarationSchema, declarationSubject, type Declaration } from '../domain/declarations/declaration.js';
import { DECLARATION_SIGNATURE_HEADER, declarationHeaders, declarationSignatureHolds } from '../adapters/declaration-signature.js';
import type { Identity } from '../adapters/identity.js';

// Publishes a node's declaration on its subject in NODES (one message per subject) only when its
// digest differs from the last one published, with a sequence one above it, and never one derived
// from an older point of the log than the last. Two controllers publishing for one node are
// ordered by the subject's expected last sequence. Each is signed with the controller's key
// (declaration-signature.ts): a node applies nothing else, and neither does the publisher take
// anything else on the subject for what it last published — a message aimed there by someone
// else, naming a high sequence or a later point of the log, must not keep the node's next
// declaration from being sent. A publisher made without the secret key reads only; one given
// only the public key (`controllerKey`) reads what the controller signed.

export interface PublishedHead {
  sequence: number;
  digest: string;
  derivedFromSeq: number;
  /** the NODES stream sequence of that message */
  streamSeq: number;
}

export type PublishOutcome = { published: true; declaration: Declaration } | { published: false; reason: 'unchanged' | 'older' };

export class DeclarationPublisher {
  private readonly js: JetStreamClient;
  private readonly jsm: Promise<JetStreamManager>;
  private readonly heads = new Map<string, PublishedHead | null>();

  constructor(
    nc: NatsConnection,
    private readonly names: { nodesStream: string; prefix: string; signer?: Identity; controllerKey?: string },
  ) {
    this.js = jetstream(nc);
    this.jsm = jetstreamManager(nc, { checkAPI: false });
  }

  /** `fresh`: read the stream, not what this publisher last saw (another controller may have published). */
  async lastPublished(node: string, options: { fresh?: boolean } = {}): Promise<PublishedHead | null> {
    if (this.heads.has(node) && !options.fresh) return this.heads.get(node) ?? null;
    const jsm = await this.jsm;
    const message = await jsm.streams.getMessage(this.names.nodesStream, { last_by_subj: declarationSubject(node, this.names.prefix) });
    const head = message ? headOf(message, this.heads.get(node) ?? null, node, this.verifyKey()) : null;
    this.heads.set(node, head);
    return head;
  }

  /** The declaration NODES holds for `node` now, in full (the console shows it), or null when none was sent. */
  async lastDeclaration(node: string): Promise<Declaration | null> {
    const jsm = await this.jsm;
    const message = await jsm.streams.getMessage(this.names.nodesStream, { last_by_subj: declarationSubject(node, this.names.prefix) });
    return message ? (declarationOf(message, node, this.verifyKey()) ?? null) : null;
  }

  /** the key a message on a node's subject must be signed with to be read as the controller's */
  private verifyKey(): string | undefined {
    return this.names.signer?.publicKey ?? this.names.controllerKey;
  }

  async publish(composed: ComposedDeclaration, derivedFromSeq: number): Promise<PublishOutcome> {
    const signer = this.names.signer;
    if (!signer) throw new Error('this declaration publisher has no controller key to sign with: it only reads');
    for (let attempt = 1; ; attempt++) {
      const last = await this.lastPublished(composed.node);
      if (last && last.digest === composed.digest) return { published: false, reason: 'unchanged' };
      if (last && last.derivedFromSeq > derivedFromSeq) return { published: false, reason: 'older' };
      const declaration: Declaration = { node: composed.node, sequence: (last?.sequence ?? 0) + 1, digest: composed.digest, derivedFromSeq, assignments: composed.assignments };
      const body = new TextEncoder().encode(JSON.stringify(declaration));
      try {
        const ack = await this.js.publish(declarationSubject(composed.node, this.names.prefix), body, {
          headers: declarationHeaders(signer, body),
          expect: { lastSubjectSequence: last?.streamSeq ?? 0 },
        });
        this.heads.set(composed.node, { ...pick(declaration), streamSeq: ack.seq });
        return { published: true, declaration };
      } catch (error) {
        // Another controller published for this node in between: read what it published, decide again.
        if (!(error instanceof JetStreamApiError && error.code === 10071) || attempt >= 5) throw error;
        this.heads.delete(composed.node);
      }
    }
  }
}

/** The declaration the message is: for `node` and, when a key is known, signed with it. */
const declarationOf = (message: StoredMsg, node: string, key: string | undefined): Declaration | undefined => {
  if (key !== undefined) {
    const signature = message.header?.get(DECLARATION_SIGNATURE_HEADER);
    if (!signature || !declarationSignatureHolds(key, message.data, signature)) return undefined;
  }
  try {
    const parsed = declarationSchema.safeParse(message.json());
    return parsed.success && parsed.data.node === node ? parsed.data : undefined;
  } catch {
    return undefined;
  }
};

/**
 * What the subject's newest message says was published. One that is no declaration the controller
 * signed for this node — an answer the server published there because someone named the subject
 * as a request's reply, a delivery aimed there (nats-server 2.9 lets any request do so,
 * docs/decisions.md), another node's declaration moved there — is published over: its sequence in NODES is above
 * every declaration's sequence this node was ever sent (each was a message of NODES before it), so
 * the next declaration's is above what the node has applied, and the node takes it.
 */
const headOf = (message: StoredMsg, known: PublishedHead | null, node: string, key: string | undefined): PublishedHead => {
  const declaration = declarationOf(message, node, key);
  if (declaration) return { ...pick(declaration), streamSeq: message.seq };
  return { sequence: Math.max(known?.sequence ?? 0, message.seq), digest: '', derivedFromSeq: known?.derivedFromSeq ?? 0, streamSeq: message.seq };
};

const pick = (declaration: Declaration) => ({ sequence: declaration.sequence, digest: declaration.digest, derivedFromSeq: declaration.derivedFromSeq });
