import { z } from 'zod';
import type { Logger } from 'pino';
import { verifySignature } from '../adapters/operator-keys.js';
import { decideMeshCommand, parseMeshCommand, type MeshCommand } from '../domain/mesh/commands.js';
import type { SubmitBuild } from '../domain/builds/decider.js';
import { probeNote, probeRefusal, probeRequestOf } from '../domain/builds/probe.js';
import { manifestOf } from '../domain/catalogue/state.js';
import { DEFAULT_MAX_PAYLOAD } from '../domain/operators/command-size.js';
import { signedCommandSchema, type SignedCommand, type SignedFor } from '../domain/operators/signed-command.js';
import { commandWindowSeconds } from '../domain/operators/command-window.js';
import type { RefusedCommand, SpentCommandIds } from '../adapters/nats/refused-commands.js';
import { CommandIdReused } from './command-reuse.js';
import { entryRefusal } from './entry-checks.js';
import { Refusal } from '../domain/refusal.js';
import { MeshError, ValidationError } from '../errors.js';
import { LogHeldRefusal, type CommandResult, type MeshService } from './mesh-service.js';
import { operatorNamed } from '../domain/operators/state.js';
import { commandCarriedOut } from '../domain/mesh/command-index.js';
import type { SourceProbe } from './source-probe.js';
import { commandOutcomeOf, type CommandMetrics } from './metrics.js';
import type { MeshPlan } from '../domain/declarations/plan.js';

/** A plan's request: the signed commands it is of, decided in turn (a drain is its unassigns, then the removal). */
const planRequestSchema = z.object({ commands: z.array(z.unknown()).min(1).max(1000) });

// The one place an operator's command enters the control plane, whatever carried it (a tool call
// on the bus, the HTTP API): its signature is checked against the key the log holds for the
// operator, then it is decided and appended. An unsigned, unknown, revoked or altered command is
// refused, saying which, and appends nothing. So is one signed outside the mesh's window of the
// controller's clock, or signed for a plan, and one whose id was refused before: a command id the
// controller refused after its signature held is spent (refused-commands.ts), so a refused command
// replayed later, when it might be carried out, is refused again, naming the first refusal.

/** A command whose id was refused before: refused again, naming that refusal; it does not spend the id anew. */
export class SpentCommandRefusal extends Refusal {
  constructor(subject: string, earlier: RefusedCommand) {
    super(subject, [
      {
        what: `--command-id ${earlier.commandId}`,
        why: `this command id was refused at ${earlier.refusedAt} (${earlier.type} from operator ${earlier.operator}, signed at ${earlier.signedAt}: ${earlier.why}); a command id that was refused is spent, so this command was not carried out`,
        remedy: 'send the command with a new command id (leave --command-id out and mesh makes one)',
      },
    ]);
    this.name = 'SpentCommandRefusal';
  }
}

/**
 * Whether a refusal spends the command's id: the mesh's answer to the command (refused, not found,
 * malformed), not the controller's state (the log held, no writer, a race lost) nor an id the log
 * already holds for a command, whose retry must still be answered as that command.
 */
const spendsId = (error: unknown): boolean =>
  error instanceof MeshError &&
  (error.code === 'refused' || error.code === 'not_found' || error.code === 'validation') &&
  !(error instanceof LogHeldRefusal) &&
  !(error instanceof SpentCommandRefusal) &&
  !(error instanceof CommandIdReused);

/** What is kept of a refusal, cut short. */
const refusalOf = (signed: SignedCommand, error: MeshError, now: Date): RefusedCommand => {
  const why = error instanceof Refusal ? error.problems.map((p) => `${p.what}: ${p.why}`).join('; ') : error.message;
  return { commandId: signed.commandId, operator: signed.operator, type: String(signed.command.type ?? '?').slice(0, 60), signedAt: signed.time.slice(0, 40), refusedAt: now.toISOString(), why: why.length > 600 ? `${why.slice(0, 599)}…` : why };
};

/** The commands an operator may send; the rest are the mesh's own (genesis, enrolment, builds' outcomes). */
export const OPERATOR_COMMANDS: ReadonlySet<string> = new Set<MeshCommand['type']>([
  'register-module',
  'rename-seat',
  'hand-over-seat',
  'add-node',
  'cordon-node',
  'uncordon-node',
  'remove-node',
  'set-node-domain',
  'answer-consumer',
  'assign',
  'unassign',
  'issue-enrolment-token',
  'add-operator',
  'revoke-operator',
  'move-module',
  'move-source',
  'submit-build',
  'set-rollout-policy',
  'keep-version',
  'deploy-version',
  'void-commit',
  'set-trust-root',
  'rotate-secret',
  'abandon-secret-rotation',
  'set-command-window',
]);

export class CommandDispatcher {
  constructor(
    private readonly mesh: MeshService,
    /**
     * `maxPayload`: the bus's message limit, which bounds a command (command-size.ts); `now`: the
     * controller's clock; `probe`: asks a holder of mesh-build-machine whether a build's folder is at
     * its commit (source-probe.ts), before an operator's build is submitted; `metrics`: told how
     * each command ended and how long it took; `spent`: where refused command ids are kept
     * (refused-commands.ts) — without it a refused command may be sent again under its id;
     * `logger`: told when a refusal could not be kept
     */
    private readonly options: { maxPayload?: number; now?: () => Date; probe?: SourceProbe; metrics?: CommandMetrics; spent?: SpentCommandIds; logger?: Logger } = {},
  ) {}

  private now(): Date {
    return (this.options.now ?? (() => new Date()))();
  }

  async dispatch(input: unknown, verb?: string): Promise<CommandResult> {
    const metrics = this.options.metrics;
    if (!metrics) return this.decide(input, verb);
    const started = performance.now();
    // Counted by the verbs there are, so a caller cannot mint a series per made-up verb.
    const label = verb !== undefined && OPERATOR_COMMANDS.has(verb) ? verb : 'other';
    try {
      const result = await this.decide(input, verb);
      metrics.commandDecided(label, 'ok', (performance.now() - started) / 1000);
      return result;
    } catch (error) {
      metrics.commandDecided(label, commandOutcomeOf(error), (performance.now() - started) / 1000);
      throw error;
    }
  }

  private async decide(input: unknown, verb?: string): Promise<CommandResult> {
    let verified: SignedCommand | undefined;
    try {
      const { command, signed, metadata } = await this.checked(input, verb, 'carry-out', (s) => (verified = s));
      const earlier = await this.options.spent?.spent(signed.commandId);
      if (earlier) throw new SpentCommandRefusal(`${command.type} (command ${signed.commandId})`, earlier);
      if (command.type === 'submit-build' && this.options.probe) return await this.submitBuild(command, signed, metadata, this.options.probe);
      return await this.mesh.execute(command, metadata, { signed });
    } catch (error) {
      // Only an operator's own command spends its id: one whose signature held.
      if (verified && this.options.spent && spendsId(error)) {
        // The operator is answered with the refusal whatever happens to its keeping; one not kept is said loudly.
        await this.options.spent.record(refusalOf(verified, error as MeshError, this.now())).catch((recordError: unknown) => {
          this.options.logger?.error({ err: recordError, commandId: verified?.commandId }, 'a refused command id could not be kept as spent: the command may be sent again under it');
        });
      }
      throw error;
    }
  }

  /**
   * `mesh … --plan`: what the signed commands (one, or a drain's steps) would do, each checked as
   * carrying it out checks it, decided in turn on a copy of the mesh at the log's head. Appends
   * nothing; a refusal is thrown as carrying it out would throw it. A build's source is not probed.
   */
  async plan(input: unknown, verb: string): Promise<MeshPlan & { commandIds: string[] }> {
    const body = planRequestSchema.safeParse(input);
    if (!body.success) throw new ValidationError(`a plan is { commands: [signed command, …] }: ${body.error.issues[0]?.message ?? 'malformed'}`, { field: 'commands' });
    const checked = [];
    for (const [index, signed] of body.data.commands.entries()) checked.push(await this.checked(signed, index === body.data.commands.length - 1 ? verb : undefined, 'plan'));
    const first = checked[0] as Awaited<ReturnType<CommandDispatcher['checked']>>;
    const plan = await this.mesh.plan(
      checked.map((c) => c.command),
      first.metadata,
      this.now(),
    );
    return { ...plan, commandIds: checked.map((c) => c.metadata.commandId) };
  }

  /**
   * A signed command, checked: its shape, its operator and signature, its type's schema, the entry
   * checks (among them, that it was signed for `purpose`, within the mesh's window). `onVerified`
   * is told once its signature holds.
   */
  private async checked(
    input: unknown,
    verb: string | undefined,
    purpose: SignedFor,
    onVerified?: (signed: SignedCommand) => void,
  ): Promise<{ command: MeshCommand; signed: SignedCommand; metadata: { commandId: string; actor: string } }> {
    const parsed = signedCommandSchema.safeParse(input);
    if (!parsed.success) {
      const unsigned = typeof input === 'object' && input !== null && !('signature' in input);
      throw new Refusal('a command', [
        unsigned
          ? { what: 'signature', why: 'the command is not signed', remedy: 'send it with `mesh`, which signs with your operator key' }
          : { what: parsed.error.issues[0]?.path.join('.') || 'command', why: parsed.error.issues[0]?.message ?? 'not a signed command', remedy: 'send { commandId, operator, command, time, signature }' },
      ]);
    }
    const signed: SignedCommand = parsed.data;
    const type = String(signed.command.type ?? '');
    if (verb !== undefined && verb !== type) throw new ValidationError(`the ${verb} tool was sent a ${type || 'typeless'} command`, { field: 'command.type' });
    if (!OPERATOR_COMMANDS.has(type)) {
      throw new Refusal(`command ${type}`, [{ what: type || 'command.type', why: 'it is not a command an operator sends', remedy: `send one of: ${[...OPERATOR_COMMANDS].join(', ')}` }]);
    }
    // Operators as far as the log can be read: while the fold is held at a commit, the operators
    // before it are who may void it (every other command is refused there, naming the sequence).
    // The view as this process knows it, and the log's head only for an operator it has not met
    // (added moments ago by a process that is not this one's writer).
    let { state } = await this.mesh.known();
    if (!operatorNamed(state.operators, signed.operator)) ({ state } = await this.mesh.view());
    const operator = operatorNamed(state.operators, signed.operator);
    const subject = `${type} from operator ${signed.operator}`;
    if (!operator) throw new Refusal(subject, [{ what: signed.operator, why: 'no such operator is registered', remedy: 'ask an operator to add you: mesh operator add NAME --key PUBLIC-KEY' }]);
    if (operator.revoked) throw new Refusal(subject, [{ what: signed.operator, why: 'this operator was revoked', remedy: 'ask an operator to add you under a new name' }]);
    if (!verifySignature(signed, operator.publicKey)) {
      throw new Refusal(subject, [{ what: 'signature', why: 'the signature does not match the command: it was altered, or signed with another key', remedy: 'send the command again as `mesh` signed it' }]);
    }
    onVerified?.(signed);
    // Read against its type's schema only now, as the operator signed it: a malformed command is refused, naming the field, and appends nothing.
    const command = parseMeshCommand(signed.command);
    const refused = entryRefusal(signed, command, { maxPayload: this.options.maxPayload ?? DEFAULT_MAX_PAYLOAD, now: this.now(), windowSeconds: commandWindowSeconds(state), purpose });
    if (refused) throw refused;
    return { command, signed, metadata: { commandId: signed.commandId, actor: `operator:${signed.operator}` } };
  }

  /**
   * A build that cannot start is refused before it is decided: what the decider would submit (its
   * source, commit and path, judged purely against the view) is looked at by a holder of the build
   * seat. "Missing" refuses, appending nothing; no answer submits as before, saying the source was
   * not checked. A command the log already holds, or one the decider refuses or leaves as it is,
   * goes straight on: `execute` answers it as always.
   */
  private async submitBuild(command: SubmitBuild, signed: SignedCommand, metadata: { commandId: string; actor: string }, probe: SourceProbe): Promise<CommandResult> {
    const { state, held } = await this.mesh.view();
    let request;
    if (!held && commandCarriedOut(state.commands, signed.commandId) === undefined) {
      try {
        request = probeRequestOf(decideMeshCommand(command, state));
      } catch {
        request = undefined;
      }
    }
    if (!request) return this.mesh.execute(command, metadata, { signed });
    const outcome = await probe(request);
    const refusal = probeRefusal(command.module, request, outcome, manifestOf(state.catalogue, command.module)?.source?.ref);
    if (refusal) throw refusal;
    const result = await this.mesh.execute(command, metadata, { signed });
    return result.events.length > 0 ? { ...result, summary: `${result.summary}; ${probeNote(request, outcome)}` } : result;
  }
}
