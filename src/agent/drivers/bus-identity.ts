import { chmodSync, chownSync, mkdirSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ModuleBusIdentity } from '../../domain/bus/module-identity.js';
import { Refusal } from '../../domain/refusal.js';
import { readOrUndefined, writeFileAtomic } from '../atomic-write.js';
import { applied, held, refused, type Outcome } from '../outcome.js';
import { sha256 } from '../resource-identity.js';
import { resolveOwner } from '../system-users.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A module's identity on the bus, in the file its processes read (`${bus.credential}`). The agent
// asks the controller for it over its own connection, opens the answer with the key it enrolled
// with, and writes it 0600 before anything of the module starts (its processes are declared
// `after` it). The controller away: held, and asked again at the next pass. Undeclared: the file
// goes, and the server has already forgotten the key by then.

/** The controller's answer for one module of this node: a Refusal when it says no. */
export type AskBusIdentity = (module: string) => Promise<ModuleBusIdentity>;

const FILE_MODE = 0o600;


export const busIdentityDriver = (context: DriverContext, ask: AskBusIdentity): Driver<'bus-identity'> => ({
  async apply({ resource, record, identity, digest }: Applying<'bus-identity'>): Promise<Outcome> {
    const owner = resource.owner === null ? null : resolveOwner(resource.owner);
    if (owner && !owner.ok) return refused(owner.reason);
    // Asked for once per declaration of it: the file as the agent wrote it for this one is kept.
    const actual = readOrUndefined(resource.path);
    let written = record && record.digest === digest && actual && sha256(actual) === record.written ? record.written : undefined;
    if (!written) {
      let answer: ModuleBusIdentity;
      try {
        answer = await ask(resource.module);
      } catch (error) {
        if (error instanceof Refusal) return refused(`${error.subject} refused: ${error.problems.map((p) => `${p.what}: ${p.why}`).join('; ')}`);
        return held(`no controller has handed it out yet: ${(error as Error).message}`);
      }
      const content = `${JSON.stringify(answer)}\n`;
      // Folders others may pass through but not list, so a module running as its own user reaches its file.
      mkdirSync(dirname(resource.path), { recursive: true, mode: 0o711 });
      writeFileAtomic(resource.path, content, FILE_MODE);
      written = sha256(content);
      context.logger.info({ key: resource.key, path: resource.path }, "wrote a module's bus identity");
    }
    const now = statSync(resource.path);
    if ((now.mode & 0o7777) !== FILE_MODE) chmodSync(resource.path, FILE_MODE);
    if (owner?.ok && (now.uid !== owner.value.uid || now.gid !== owner.value.gid)) chownSync(resource.path, owner.value.uid, owner.value.gid);
    context.records.put({ id: record?.id ?? newRecordId(), kind: 'bus-identity', key: resource.key, module: resource.module, identity, digest, path: resource.path, written });
    return applied;
  },

  async undeclare(record) {
    rmSync(record.path, { force: true });
    try {
      // the module's own folder of the mesh's, if nothing else (its secrets) is left in it
      rmdirSync(dirname(record.path));
    } catch {
      // not empty, or gone: either way nothing of the identity is left
    }
    context.records.delete(record.id);
    context.logger.info({ key: record.key, path: record.path }, "removed an undeclared module's bus identity");
  },
});
