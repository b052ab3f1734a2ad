import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { moduleBusIdentity, nkeyOf, type Identity } from '../adapters/identity.js';
import { fromBase64, toBase64 } from '../adapters/key-files.js';
import { seal } from '../adapters/sealing.js';
import { busIdentityProblems, busIdentityRequestSchema, busIdentityToolSubject, moduleBusGrant, type BusIdentityAnswer, type ModuleBusIdentity } from '../domain/bus/module-identity.js';
import type { MeshService } from './mesh-service.js';
import { serveTool } from './serve-tool.js';
import { nodeNamed } from '../domain/nodes/state.js';
import { describeSpeaker, refuseImpersonation, speakerOfReply, type ImpersonationMetrics } from './speaker.js';

// The mesh-controller seat's `bus-identity` tool: a node's agent asks for the identity of a module
// it is told to run, and gets it sealed to the node's own key (the one it enrolled with). Anyone
// may ask; only that node can open the answer. The key is derived from the controller's key again
// on every call (moduleBusIdentity), so nothing is stored and nothing secret is ever in the clear
// on the wire or in a stream. Judged against the log's head, so an agent that has just been told
// to run a module finds it assigned here.
//
// Who asks: every host may publish on this subject (users.ts hostUser), so the subject does not
// say which one. The reply does: a host reads answers only under its own inbox, so a request whose
// answer goes to host beta's inbox is beta asking, and one naming another node is refused with a
// finding (speaker.ts). An operator or a joining machine names no node of its own here and is
// refused likewise; the controller and an unnamed inbox (the harness) are not judged by it.

export interface BusIdentityServiceOptions {
  prefix: string;
  /** the controller's own key: module keys are derived from it, as the bus authority derives their users */
  controller: Pick<Identity, 'secretKey'>;
  logger: Logger;
  /** counts a request refused for naming another node than the host that asked */
  metrics?: Partial<ImpersonationMetrics>;
}

export class BusIdentityService {
  private subscription: Subscription | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly mesh: MeshService,
    private readonly options: BusIdentityServiceOptions,
  ) {}

  start(): void {
    this.subscription = serveTool(this.nc, busIdentityToolSubject(this.options.prefix), (payload, reply) => this.answer(payload, reply));
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }

  private async answer(payload: Uint8Array, reply: string | undefined): Promise<BusIdentityAnswer> {
    let request;
    try {
      request = busIdentityRequestSchema.parse(JSON.parse(new TextDecoder().decode(payload)));
    } catch (error) {
      return { ok: false, refused: [{ what: 'request', why: `not a bus identity request: ${(error as Error).message}`, remedy: 'send { node, module }' }] };
    }
    const speaker = speakerOfReply(reply);
    if (speaker && speaker.kind !== 'controller' && !(speaker.kind === 'host' && speaker.node === request.node)) {
      return { ok: false, refused: [refuseImpersonation(this.options, { entry: 'bus-identity', identity: describeSpeaker(speaker), claimed: `node ${request.node}`, field: 'node' })] };
    }
    try {
      const state = await this.mesh.current();
      const problems = busIdentityProblems(state, request);
      const sealTo = nodeNamed(state.nodes, request.node)?.publicKey;
      if (problems.length > 0 || !sealTo) return { ok: false, refused: problems };
      const key = moduleBusIdentity(this.options.controller, request.node, request.module);
      const identity: ModuleBusIdentity = {
        node: request.node,
        module: request.module,
        nkey: nkeyOf(key.publicKey),
        seed: toBase64(fromBase64(key.secretKey).subarray(0, 32)),
        ...moduleBusGrant(state, this.options.prefix, request.node, request.module),
      };
      this.options.logger.info({ node: request.node, module: request.module, seq: state.seq }, 'bus identity handed out, sealed to its node');
      return { ok: true, node: request.node, module: request.module, sealed: seal(JSON.stringify(identity), sealTo) };
    } catch (error) {
      this.options.logger.error({ err: error, node: request.node, module: request.module }, 'bus identity not handed out');
      return { ok: false, refused: [{ what: `${request.node}/${request.module}`, why: (error as Error).message, remedy: 'try again; if it persists, look at the controller log' }] };
    }
  }
}
