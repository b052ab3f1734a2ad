import { commandEnv } from '../command-env.js';
import { held, refused, type Outcome } from '../outcome.js';
import type { ProcessRecord } from '../records.js';
import { resolveRunAs } from '../system-users.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';
import { Supervisor } from './supervisor.js';

// A declared long-running command. The agent keeps one supervisor per record; a record keeps the
// pid and start time of what runs, so a restarted agent adopts it instead of starting another.
// Only what the agent started is ever recorded, so undeclaring stops exactly that (ADR 0118).

export interface ProcessDriver extends Driver<'process'> {
  /** After an agent restart: watches every recorded process that is still the one recorded. */
  adoptAll(): void;
  /** Leaves every process running and stops watching them (the agent is exiting). */
  detachAll(): void;
}

export const processDriver = (context: DriverContext): ProcessDriver => {
  const supervisors = new Map<string, Supervisor>();

  const supervisorOf = (record: ProcessRecord): Supervisor => {
    const known = supervisors.get(record.id);
    if (known) return known;
    const supervisor = new Supervisor(record.key, context.timings, {
      recorded: (state) => {
        const current = context.records.get(record.id);
        if (current?.kind === 'process') context.records.put({ ...current, ...state });
      },
      changed: (reason) => context.wake(`${record.key} ${reason}`),
    }, { running: record.running, restarts: record.restarts, lastExit: record.lastExit });
    supervisors.set(record.id, supervisor);
    return supervisor;
  };

  return {
    adoptAll() {
      for (const record of context.records.all()) {
        if (record.kind !== 'process' || supervisors.has(record.id)) continue;
        if (supervisorOf(record).adopt()) context.logger.info({ key: record.key, pid: record.running?.pid }, 'adopted a process this agent started before');
      }
    },

    async apply({ resource, record, identity, digest, gate }: Applying<'process'>): Promise<Outcome> {
      const user = resolveRunAs(resource.user);
      if (!user.ok) return refused(user.reason);
      const env = commandEnv(resource, user.value);
      const running = record ? supervisors.get(record.id) : undefined;
      // A gate or a missing environment file keeps a process from starting, never stops one.
      if (!running?.active && gate) return held(gate);
      if (!env.ok) return running?.active ? running.outcome() : held(env.reason);
      const next: ProcessRecord = record
        ? { ...(context.records.get(record.id) as ProcessRecord), key: resource.key, module: resource.module, digest }
        : { id: newRecordId(), kind: 'process', key: resource.key, module: resource.module, identity, digest, running: null, restarts: 0, lastExit: null };
      context.records.put(next);
      const supervisor = supervisorOf(next);
      const wasActive = supervisor.active;
      supervisor.ensure({ command: resource.run, env: env.env, user: user.value, logFile: context.folder.logFile(next.id) });
      if (!wasActive) context.logger.info({ key: resource.key, pid: supervisor.pid }, 'started a process');
      return supervisor.outcome();
    },

    async undeclare(record) {
      await supervisorOf(record).stop(context.timings.stopGraceMs);
      supervisors.delete(record.id);
      context.records.delete(record.id);
      context.logger.info({ key: record.key, pid: record.running?.pid }, 'stopped an undeclared process');
    },

    detachAll() {
      for (const supervisor of supervisors.values()) supervisor.detach();
      supervisors.clear();
    },
  };
};
