import { applied, refused, type Outcome } from '../outcome.js';
import type { ServiceManager } from '../service-manager.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A unit of the machine's service manager, which the mesh acts on but did not make (ADR 0118,
// issue 130 of the seeds). At its first apply the agent records the state it found the unit in —
// running or not, and enabled or not where the declaration sets it — and never overwrites it.
// Undeclared (unassigned, an empty declaration, a renamed id matched by its unit and so never
// undeclared), the unit is given that state back: found running, left running; started by the
// mesh, stopped; enabled by the mesh, disabled; never started on the way out. A change of what it
// reloads on reloads a running unit; nothing restarts it.

export interface ApplyingService extends Applying<'service'> {
  /** digest of the resources it reloads on, as declared now */
  triggers: string;
}

export interface ServiceDriver extends Omit<Driver<'service'>, 'apply'> {
  apply(applying: ApplyingService): Promise<Outcome>;
}

export const serviceDriver = (context: DriverContext, manager: ServiceManager): ServiceDriver => ({
  async apply({ resource, record, identity, digest, triggers }: ApplyingService): Promise<Outcome> {
    let status;
    try {
      status = await manager.status(resource.unit);
    } catch (error) {
      return refused((error as Error).message);
    }
    if (!status.exists) return refused(`${manager.name} knows no unit ${resource.unit} on this machine`);
    // R118.2: found once, at the first apply; enabled-at-boot only once a declaration sets it.
    const found = {
      running: record?.found.running ?? status.running,
      enabled: record?.found.enabled ?? (resource.enabled === null ? null : status.enabled),
    };
    let started = false;
    if (resource.state === 'running' && !status.running) {
      await manager.act('start', resource.unit);
      started = true;
    }
    if (resource.state === 'stopped' && status.running) await manager.act('stop', resource.unit);
    if (resource.enabled === true && !status.enabled) await manager.act('enable', resource.unit);
    if (resource.enabled === false && status.enabled) await manager.act('disable', resource.unit);
    // A setting it reads changed: a running unit reloads (R117.5), one just started has read it already.
    const running = resource.state === 'running' || (resource.state === null && status.running);
    if (record && record.triggers !== triggers && running && !started) await manager.act('reload', resource.unit);
    context.records.put({ id: record?.id ?? newRecordId(), kind: 'service', key: resource.key, module: resource.module, identity, digest, unit: resource.unit, found, started: (record?.started ?? false) || started, triggers });
    return applied;
  },

  async undeclare(record) {
    const status = await manager.status(record.unit);
    if (status.exists) {
      // R118.6: a unit the mesh never started (declared with no state, or found running) is forgotten.
      if (!record.found.running && record.started && status.running) {
        await manager.act('stop', record.unit);
        context.logger.info({ unit: record.unit }, 'restored: stopped again, as the host found it');
      } else {
        context.logger.info({ unit: record.unit }, record.found.running ? 'forgotten: it was running before the mesh; left as it is' : 'forgotten: the mesh did not start it; left as it is');
      }
      if (record.found.enabled === false && status.enabled) await manager.act('disable', record.unit);
      if (record.found.enabled === true && !status.enabled) context.logger.info({ unit: record.unit }, 'left disabled: the mesh never enables a unit on the way out');
    }
    context.records.delete(record.id);
  },
});
