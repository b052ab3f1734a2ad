import { appendFileSync } from 'node:fs';
import { execa, type Result } from 'execa';
import { commandEnv } from '../command-env.js';
import { dockerRunArguments, type DockerEngine } from '../docker.js';
import { applied, exitDescription, held, refused, tail, type Outcome } from '../outcome.js';
import type { RunOnceRecord } from '../records.js';
import { backoff } from '../settings.js';
import { resolveRunAs } from '../system-users.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A step that runs to completion before what it gates (a module's prepare step among them). Its
// record is its identity — the digest of its whole declaration — so it runs again only when
// something it is declared with changes (ADR 0099). A step runs in the background: a pass starts
// it and reports what it gates as held; the step's end wakes another pass. A failed step is
// refused with its exit status and the tail of its output, and tried again after a delay that
// doubles per failure.

export interface RunOnceDriver extends Driver<'run-once'> {
  /** Stops steps nothing declares any more (a step that is running when its declaration changes). */
  cancelExcept(identities: ReadonlySet<string>): void;
  /** Stops every running step: the agent is exiting, and a step cut short runs again next time. */
  cancelAll(): void;
}

interface Running {
  startedAt: Date;
  cancel: () => void;
}

export const runOnceDriver = (context: DriverContext, docker: DockerEngine): RunOnceDriver => {
  const running = new Map<string, Running>();

  const finish = (step: Applying<'run-once'>, id: string, previous: RunOnceRecord | undefined, result: Result): void => {
    appendFileSync(context.folder.logFile(id), `${String(result.all ?? '')}\n-- ${new Date().toISOString()}: ${result.shortMessage || `exited with status ${result.exitCode}`}\n`);
    const attempts = (previous?.attempts ?? 0) + 1;
    const succeeded = result.exitCode === 0 && !result.signal;
    const failure = succeeded ? null : `${exitDescription(result)}${result.all ? `: ${tail(String(result.all))}` : ''}`;
    const retryAfter = succeeded ? null : new Date(Date.now() + backoff(attempts, context.timings.stepRetryMs, context.timings.stepRetryMaxMs)).toISOString();
    const { resource, identity, digest } = step;
    context.records.put({ id, kind: 'run-once', key: resource.key, module: resource.module, identity, digest, succeeded, failure, attempts, finishedAt: new Date().toISOString(), retryAfter });
  };

  return {
    async apply(step: Applying<'run-once'>): Promise<Outcome> {
      const { resource, record, identity, digest, gate } = step;
      if (record?.succeeded) {
        if (record.key !== resource.key || record.digest !== digest) context.records.put({ ...record, key: resource.key, module: resource.module, digest });
        return applied;
      }
      const inFlight = running.get(identity);
      if (inFlight) return held(`running since ${inFlight.startedAt.toISOString()}`);
      if (record?.failure && record.retryAfter && Date.now() < Date.parse(record.retryAfter)) return refused(record.failure);
      if (gate) return held(gate);
      const user = resolveRunAs(resource.user);
      if (!user.ok) return refused(user.reason);
      const env = commandEnv(resource, user.value);
      if (!env.ok) return held(env.reason);
      if (resource.image !== null) {
        const engine = await docker.answers();
        if (!engine.ok) return held(engine.reason);
      }
      const [file = '', ...args] = resource.command;
      const subprocess =
        resource.image === null
          ? execa(file, args, { env: env.env, extendEnv: false, cwd: '/', all: true, reject: false, stdin: 'ignore', ...(user.value ? { uid: user.value.uid, gid: user.value.gid } : {}) })
          : execa('docker', ['run', '--rm', ...dockerRunArguments({ ...resource, image: resource.image, command: resource.command })], { all: true, reject: false, stdin: 'ignore' });
      const startedAt = new Date();
      let cancelled = false;
      const entry: Running = {
        startedAt,
        cancel: () => {
          cancelled = true;
          subprocess.kill('SIGKILL');
        },
      };
      running.set(identity, entry);
      const id = record?.id ?? newRecordId();
      context.logger.info({ key: resource.key, pid: subprocess.pid }, 'running a step');
      void subprocess.then((result) => {
        if (running.get(identity) === entry) running.delete(identity);
        if (cancelled) return;
        finish(step, id, record, result);
        context.wake(`${resource.key} ${result.exitCode === 0 ? 'succeeded' : 'failed'}`);
      });
      return held(`running since ${startedAt.toISOString()}`);
    },

    async undeclare(record) {
      running.get(record.identity)?.cancel();
      context.records.delete(record.id);
    },

    cancelExcept(identities) {
      for (const [identity, step] of running) if (!identities.has(identity)) step.cancel();
    },

    cancelAll() {
      for (const step of running.values()) step.cancel();
    },
  };
};
