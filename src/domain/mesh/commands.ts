import { z } from 'zod';
import { ValidationError } from '../../errors.js';
import { decideBuildCommand, deployVersionSchema, keepVersionSchema, moveModuleSchema, moveSourceSchema, recordBuildSchema, setRolloutPolicySchema, submitBuildSchema, type BuildCommand } from '../builds/decider.js';
import { assignSchema, decideAssign, decideUnassign, unassignSchema, type Assign, type Unassign } from '../assignments/decider.js';
import { decideRegisterModule, registerModuleSchema, type RegisterModule } from '../catalogue/decider.js';
import type { Decision } from '../decision.js';
import { fieldOf } from '../events/envelope.js';
import { decideVoidCommit, voidCommitSchema, type VoidCommit } from '../log/void.js';
import {
  addNodeSchema,
  cordonNodeSchema,
  decideAddNode,
  decideCordonNode,
  decideRemoveNode,
  decideUncordonNode,
  removeNodeSchema,
  uncordonNodeSchema,
  type AddNode,
  type CordonNode,
  type RemoveNode,
  type UncordonNode,
} from '../nodes/decider.js';
import { decideEnrolNode, decideIssueEnrolmentToken, enrolNodeSchema, issueEnrolmentTokenSchema, type EnrolNode, type IssueEnrolmentToken } from '../nodes/enrolment.js';
import { addOperatorSchema, decideAddOperator, decideRevokeOperator, revokeOperatorSchema, type AddOperator, type RevokeOperator } from '../operators/operators.js';
import { decideDefineSystemSeat, decideHandOverSeat, decideRenameSeat, defineSystemSeatSchema, handOverSeatSchema, renameSeatSchema, type DefineSystemSeat, type HandOverSeat, type RenameSeat } from '../seats/decider.js';
import { decideSetCommandWindow, setCommandWindowSchema, type SetCommandWindow } from '../operators/command-window.js';
import { decideSetTrustRoot, setTrustRootSchema, type SetTrustRoot } from '../trust/decider.js';
import type { MeshState } from './state.js';
import { decideSetNodeDomain, setNodeDomainSchema, type SetNodeDomain } from '../routes/decider.js';
import { answerConsumerSchema, decideAnswerConsumer, type AnswerConsumer } from '../answers/decider.js';
import { abandonRotationSchema, decideAbandonRotation, decideRotateSecret, rotateSecretSchema, type AbandonRotation, type RotateSecret } from '../secrets/rotation.js';

// Every command the mesh takes, and the one place that routes it to its rule.

export type MeshCommand = RegisterModule | DefineSystemSeat | RenameSeat | HandOverSeat | AddNode | CordonNode | UncordonNode | RemoveNode | Assign | Unassign | IssueEnrolmentToken | EnrolNode | BuildCommand | AddOperator | RevokeOperator | VoidCommit | SetNodeDomain | SetTrustRoot | AnswerConsumer | RotateSecret | AbandonRotation | SetCommandWindow;

/** Every command's schema, told apart by `type`: a command body as it arrives is read against the one its type names. */
export const meshCommandSchema = z.discriminatedUnion('type', [
  registerModuleSchema,
  defineSystemSeatSchema,
  renameSeatSchema,
  handOverSeatSchema,
  addNodeSchema,
  cordonNodeSchema,
  uncordonNodeSchema,
  removeNodeSchema,
  assignSchema,
  unassignSchema,
  issueEnrolmentTokenSchema,
  enrolNodeSchema,
  moveSourceSchema,
  moveModuleSchema,
  submitBuildSchema,
  recordBuildSchema,
  setRolloutPolicySchema,
  keepVersionSchema,
  deployVersionSchema,
  addOperatorSchema,
  revokeOperatorSchema,
  voidCommitSchema,
  setNodeDomainSchema,
  setTrustRootSchema,
  answerConsumerSchema,
  rotateSecretSchema,
  abandonRotationSchema,
  setCommandWindowSchema,
]);

/**
 * A command body as it arrived (an operator's signed command), read as the command its `type`
 * names. One that does not fit is refused before it is decided, naming every field that does not
 * and why (`command.pins`: the field `pins` of the command), so nothing it asks reaches the log.
 */
export const parseMeshCommand = (body: unknown): MeshCommand => {
  const parsed = meshCommandSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((issue) => ({ field: fieldOf('command', issue), why: issue.message }));
  const type = typeof body === 'object' && body !== null && 'type' in body && typeof body.type === 'string' ? body.type : 'a';
  throw new ValidationError(`the ${type} command is malformed, so nothing was decided: ${fields.map((f) => `${f.field}: ${f.why}`).join('; ')}`, {
    field: fields[0]?.field ?? 'command',
    fields,
  });
};

export const decideMeshCommand = (command: MeshCommand, state: MeshState): Decision => {
  switch (command.type) {
    case 'register-module':
      return decideRegisterModule(command, state);
    case 'define-system-seat':
      return decideDefineSystemSeat(command, state);
    case 'rename-seat':
      return decideRenameSeat(command, state);
    case 'hand-over-seat':
      return decideHandOverSeat(command, state);
    case 'add-node':
      return decideAddNode(command, state);
    case 'cordon-node':
      return decideCordonNode(command, state);
    case 'uncordon-node':
      return decideUncordonNode(command, state);
    case 'remove-node':
      return decideRemoveNode(command, state);
    case 'assign':
      return decideAssign(command, state);
    case 'unassign':
      return decideUnassign(command, state);
    case 'issue-enrolment-token':
      return decideIssueEnrolmentToken(command, state);
    case 'enrol-node':
      return decideEnrolNode(command, state);
    case 'add-operator':
      return decideAddOperator(command, state);
    case 'revoke-operator':
      return decideRevokeOperator(command, state);
    case 'void-commit':
      return decideVoidCommit(command);
    case 'set-node-domain':
      return decideSetNodeDomain(command, state);
    case 'set-trust-root':
      return decideSetTrustRoot(command, state);
    case 'answer-consumer':
      return decideAnswerConsumer(command, state);
    case 'rotate-secret':
      return decideRotateSecret(command, state);
    case 'abandon-secret-rotation':
      return decideAbandonRotation(command, state);
    case 'set-command-window':
      return decideSetCommandWindow(command, state);
    case 'move-source':
    case 'move-module':
    case 'submit-build':
    case 'record-build':
    case 'set-rollout-policy':
    case 'keep-version':
    case 'deploy-version':
      return decideBuildCommand(command, state);
    default: {
      const unreachable: never = command;
      throw new Error(`unknown command ${JSON.stringify(unreachable)}`);
    }
  }
};
