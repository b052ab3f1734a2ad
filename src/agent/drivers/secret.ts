import { existsSync } from 'node:fs';
import { applied, held, type Outcome } from '../outcome.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A secret's value never travels in a declaration: the vault seals it to this node's key and
// delivers it on request/reply. Until that delivery exists the secret is held, unless a file is
// already at its path. The agent did not write the file, so undeclaring leaves it.

export const secretDriver = (context: DriverContext): Driver<'secret'> => ({
  async apply({ resource, record, identity, digest }: Applying<'secret'>): Promise<Outcome> {
    if (!existsSync(resource.path)) return held(`waiting for the vault to deliver ${resource.secret}`);
    context.records.put({ id: record?.id ?? newRecordId(), kind: 'secret', key: resource.key, module: resource.module, identity, digest, path: resource.path });
    return applied;
  },

  async undeclare(record) {
    context.records.delete(record.id);
  },
});
