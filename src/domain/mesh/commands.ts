import { decideBuildCommand, type BuildCommand } from '../builds/decider.js';
import { decideAssign, decideUnassign, type Assign, type Unassign } from '../assignments/decider.js';
import { decideRegisterModule, type RegisterModule } from '../catalogue/decider.js';
import type { Decision } from '../decision.js';
import { decideVoidCommit, type VoidCommit } from '../log/void.js';
import { decideAddNode, type AddNode } from '../nodes/decider.js';
import { decideEnrolNode, decideIssueEnrolmentToken, type EnrolNode, type IssueEnrolmentToken } from '../nodes/enrolment.js';
import { decideAddOperator, decideRevokeOperator, type AddOperator, type RevokeOperator } from '../operators/operators.js';
import { decideDefineSystemSeat, decideHandOverSeat, decideRenameSeat, type DefineSystemSeat, type HandOverSeat, type RenameSeat } from '../seats/decider.js';
import type { MeshState } from './state.js';

// Every command the mesh takes, and the one place that routes it to its rule.

export type MeshCommand = RegisterModule | DefineSystemSeat | RenameSeat | HandOverSeat | AddNode | Assign | Unassign | IssueEnrolmentToken | EnrolNode | BuildCommand | AddOperator | RevokeOperator | VoidCommit;

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
    case 'move-source':
    case 'move-module':
    case 'submit-build':
    case 'record-build':
    case 'set-rollout-policy':
      return decideBuildCommand(command, state);
    default: {
      const unreachable: never = command;
      throw new Error(`unknown command ${JSON.stringify(unreachable)}`);
    }
  }
};
