import type { Decision } from '../decision.js';
import type { MeshState } from '../mesh/state.js';
import { SecretMade, SecretShared, secretAggregate } from './events.js';
import { secretNamed } from './state.js';

// What the controller records once the vault has confirmed it holds a secret's version for these
// recipients: a new version is `secret.made`, other recipients for the same version
// `secret.shared`, the same again nothing. Not an operator's command: the controller states it,
// as it states facts, after the vault answered.

export interface RecordSecret {
  secret: string;
  purpose: string;
  recipients: string[];
  version: number;
}

export const decideRecordSecret = (command: RecordSecret, state: MeshState): Decision => {
  const aggregate = secretAggregate(command.secret);
  const known = secretNamed(state.secrets, command.secret);
  const recipients = [...command.recipients].sort();
  if (!known || command.version > known.version) {
    return { aggregate, events: [{ type: SecretMade.type, data: { secret: command.secret, purpose: command.purpose, recipients, version: command.version } }], summary: `secret ${command.secret} made at version ${command.version}` };
  }
  if (command.version === known.version && recipients.join(',') !== known.recipients.join(',')) {
    return { aggregate, events: [{ type: SecretShared.type, data: { secret: command.secret, recipients, version: command.version } }], summary: `secret ${command.secret} now goes to ${recipients.join(', ') || 'nobody'}` };
  }
  return { aggregate, events: [], summary: `secret ${command.secret} is recorded as it is` };
};
