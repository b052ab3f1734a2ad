import { createHash } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { enrolRequestSchema, enrolToolSubject, type EnrolAnswer } from '../domain/nodes/enrol-wire.js';
import { tokenVerifier } from '../domain/nodes/enrolment.js';
import { Refusal } from '../domain/refusal.js';
import type { MeshService } from './mesh-service.js';
import { serveTool } from './serve-tool.js';
import { enrolmentToken } from '../domain/nodes/state.js';
import { describeSpeaker, refuseImpersonation, speakerOfReply, type ImpersonationMetrics } from './speaker.js';

// The mesh-controller seat's `enrol` tool. An agent presents its token and two public keys; the
// token is spent through the log (exactly once, whatever races), and the node's host key becomes
// its user on the bus when the control plane next composes the list. Nothing secret is made or
// sent back: a lost answer is answered again by a retry with the same token and keys. The answer
// names the controller's public key, which the node then trusts to sign its declarations (trust
// on enrolment: the token's secret is what makes the answer the mesh's).
//
// Who asks: a joining machine connects as its token's own bus identity (users.ts enrolmentUser),
// and every live token's identity may publish on this subject, so the subject does not say which.
// The reply does: a token's identity reads answers only under `_INBOX.enrol.<tokenId>`, so a
// request answered there is that token speaking, and one presenting another token is refused with
// a finding (speaker.ts), spending nothing. The node it names is the token's to bind (a token made
// for a node enrols only that node: enrolment.ts). Operators may publish here too; for them, and
// any other caller, the token's secret is the authority.

export interface EnrolmentServiceOptions {
  prefix: string;
  /** the bus address an enrolled node is told to use */
  natsUrl: string;
  /** the controller's public key (base64): the enrolled node applies only declarations signed with it */
  controllerKey: string;
  logger: Logger;
  now?: () => Date;
  /** counts a request refused for presenting another token than the one the caller connected as */
  metrics?: Partial<ImpersonationMetrics>;
}

export class EnrolmentService {
  private subscription: Subscription | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly mesh: MeshService,
    private readonly options: EnrolmentServiceOptions,
  ) {}

  start(): void {
    this.subscription = serveTool(this.nc, enrolToolSubject(this.options.prefix), (payload, reply) => this.answer(payload, reply));
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }

  private async answer(payload: Uint8Array, reply: string | undefined): Promise<EnrolAnswer> {
    let request;
    try {
      request = enrolRequestSchema.parse(JSON.parse(new TextDecoder().decode(payload)));
    } catch (error) {
      return { ok: false, refused: [{ what: 'request', why: `not an enrolment request: ${(error as Error).message}`, remedy: 'send { node, token, publicKey, busKey }' }] };
    }
    const [tokenId = '', secret = ''] = request.token.split('.');
    const speaker = speakerOfReply(reply);
    if (speaker && (speaker.kind === 'host' || (speaker.kind === 'enrolment' && speaker.tokenId !== tokenId))) {
      return { ok: false, refused: [refuseImpersonation(this.options, { entry: 'enrol', identity: describeSpeaker(speaker), claimed: `enrolment token ${tokenId} (node ${request.node})`, field: 'token' })] };
    }
    try {
      const result = await this.mesh.execute(
        { type: 'enrol-node', node: request.node, tokenId, secret, publicKey: request.publicKey, busKey: request.busKey, now: (this.options.now?.() ?? new Date()).toISOString() },
        // The same machine retrying (same token, same key) is the same command; any other is a new one.
        { commandId: `enrol:${tokenId}:${createHash('sha256').update(request.publicKey).digest('hex').slice(0, 16)}`, actor: `host:${request.node}` },
      );
      if (result.duplicate) {
        // A retry: answer again only with the right secret, for the node that spent the token.
        const state = await this.mesh.current();
        const token = enrolmentToken(state.nodes, tokenId);
        if (!token || token.verifier !== tokenVerifier(secret) || token.spentBy !== request.node) {
          return { ok: false, refused: [{ what: 'token', why: 'the token is not one the mesh made, or not for this node', remedy: 'ask an operator for a token: mesh node token' }] };
        }
      }
      this.options.logger.info({ node: request.node, tokenId, seq: result.seq }, 'node enrolled');
      return { ok: true, node: request.node, seq: result.seq, controllerKey: this.options.controllerKey };
    } catch (error) {
      if (error instanceof Refusal) return { ok: false, refused: [...error.problems] };
      this.options.logger.error({ err: error, node: request.node }, 'enrolment failed');
      return { ok: false, refused: [{ what: 'enrolment', why: (error as Error).message, remedy: 'try again; if it persists, look at the controller log' }] };
    }
  }
}
