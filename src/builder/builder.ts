import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jetstream, type Consumer, type JsMsg } from '@nats-io/jetstream';
import { NoRespondersError, type Msg, type NatsConnection, type Subscription } from '@nats-io/nats-core';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { Logger } from 'pino';
import { fetchArtifact, storeArtifact } from '../adapters/artifacts/artifact-store.js';
import { answerToInbox } from '../adapters/nats/answer.js';
import { BUILDERS_CONSUMER, PROBE_QUEUE, artifactBucketName, buildOutcomeSubject, cloneBaseSubject, jobsStreamName, probeSubject } from '../adapters/nats/build-streams.js';
import type { SourceRef } from '../domain/builds/events.js';
import { buildJobSchema, type BuildJob, type BuildOutcome } from '../domain/builds/job.js';
import { probeRequestSchema, treePathOf, type ProbeAnswer, type ProbeRequest } from '../domain/builds/probe.js';
import { baseVariable, lastLines } from '../domain/builds/recipe.js';
import { relativePathProblem } from '../domain/host-paths.js';

// A holder of mesh-build-machine: takes one job at a time from the seat's work queue, clones the
// source at the commit, runs the recipe with the bases it was handed, stores what the recipe left
// under its content digest and states built or failed. It says it is still working while the
// recipe runs; a builder that dies stops saying so, and the job goes to the next holder. It also
// answers the seat's probe: whether a module's folder is at a commit, asked before a build is submitted.

export interface BuilderOptions {
  prefix: string;
  /** where checkouts are made; each job gets its own folder, removed afterwards */
  workDir?: string;
  /** how often it tells the server it is still working on a job (under the consumer's ack wait) */
  heartbeatMs: number;
  name?: string;
  logger: Logger;
  /** how long the probe's git work may take before it answers "unchecked" (default 15 s, inside the controller's 20 s wait) */
  probeTimeoutMs?: number;
}

const OUTPUT_TAIL = 4_000;
const PROBE_TIMEOUT_MS = 15_000;

export { baseVariable };

class JobFailed extends Error {
  constructor(
    message: string,
    readonly output = '',
  ) {
    super(message);
  }
}

/** A failure that is not the job's: the job goes back to the queue and comes round again. */
class NotNow extends Error {}

export class Builder {
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  private probes: Subscription | undefined;
  private readonly name: string;

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: BuilderOptions,
  ) {
    this.name = options.name ?? `builder@${hostname()}:${process.pid}`;
  }

  start(): void {
    // The probe needs no queue: it is answered as soon as the builder is on the bus.
    this.probes = this.nc.subscribe(probeSubject(this.options.prefix), { queue: PROBE_QUEUE, callback: (_error, message) => void this.answerProbe(message) });
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.probes?.unsubscribe();
    await this.running?.catch(() => undefined);
  }

  private async answerProbe(message: Msg): Promise<void> {
    let answer: ProbeAnswer;
    const parsed = probeRequestSchema.safeParse((() => {
      try {
        return message.json();
      } catch {
        return undefined;
      }
    })());
    if (!parsed.success) answer = { found: 'unchecked', why: `a probe this builder cannot read: ${parsed.error.issues[0]?.message ?? 'not JSON'}`, looked: {}, builder: this.name };
    else answer = await this.probe(parsed.data).catch((error: unknown) => ({ found: 'unchecked' as const, why: (error as Error).message, looked: {}, builder: this.name }));
    this.options.logger.info({ probe: answer }, 'answered a probe');
    answerToInbox(message, JSON.stringify(answer), (reply) => this.options.logger.warn({ reply }, 'a probe asked to be answered on a subject that is no inbox: not answered'));
  }

  /**
   * Whether the folder is at the commit: the repository fetched without a checkout (trees, no
   * file contents) into a folder of its own, removed afterwards, the git work bounded in time.
   */
  async probe(request: ProbeRequest): Promise<ProbeAnswer> {
    const deadline = Date.now() + (this.options.probeTimeoutMs ?? PROBE_TIMEOUT_MS);
    const unchecked = (why: string, looked: { url?: string; commit?: string; path?: string } = {}): ProbeAnswer => ({ found: 'unchecked', why, looked, builder: this.name });
    let url: string;
    try {
      url = await this.cloneUrl(request.source);
    } catch (error) {
      return unchecked((error as Error).message);
    }
    const looked = { url, commit: request.commit, path: request.path };
    const treePath = treePathOf(request.path);
    if (treePath === undefined) return { found: 'missing', why: `${request.path} is outside the repository`, looked, builder: this.name };
    const work = await mkdtemp(join(this.options.workDir ?? tmpdir(), 'probe-'));
    const git = (args: string[]) => runCommand('git', args, work, { GIT_TERMINAL_PROMPT: '0' }, Math.max(1, deadline - Date.now()));
    try {
      const bare = join(work, 'src.git');
      const cloned = await git(['clone', '--quiet', '--bare', '--filter=blob:none', url, bare]).then(
        () => undefined,
        (error: JobFailed) => error,
      );
      if (cloned) return unchecked(Date.now() >= deadline ? `fetching ${url} took longer than ${this.options.probeTimeoutMs ?? PROBE_TIMEOUT_MS} ms` : `cloning ${url} failed: ${lastLines(cloned.output) || cloned.message}`, looked);
      const inBare = (args: string[]) => runCommand('git', ['--git-dir', bare, ...args], work, { GIT_TERMINAL_PROMPT: '0' }, Math.max(1, deadline - Date.now()));
      const commit = await inBare(['cat-file', '-e', `${request.commit}^{commit}`]).then(() => true, () => false);
      if (!commit) return unchecked(`commit ${request.commit} is not in ${url}`, looked);
      const kind = await inBare(['cat-file', '-t', `${request.commit}:${treePath}`]).then((output) => output.trim(), () => undefined);
      if (kind === 'tree') return { found: 'folder', looked, builder: this.name };
      return { found: 'missing', why: kind ? `${request.path} is a ${kind === 'blob' ? 'file' : kind}, not a folder` : `the commit's tree has nothing at ${request.path}`, looked, builder: this.name };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  private async bind(): Promise<{ consumer: Consumer; store: ObjectStore }> {
    const js = jetstream(this.nc);
    for (;;) {
      try {
        const consumer = await js.consumers.get(jobsStreamName(this.options), BUILDERS_CONSUMER);
        const store = await new Objm(this.nc).open(artifactBucketName(this.options));
        return { consumer, store };
      } catch (error) {
        // The control plane creates the seat's queue and the store; until then there is nothing to take.
        if (this.abort.signal.aborted) throw error;
        this.options.logger.info({ err: (error as Error).message }, 'the build queue is not there yet; waiting for the control plane');
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }

  private async loop(): Promise<void> {
    const { consumer, store } = await this.bind();
    this.options.logger.info({ builder: this.name }, 'taking build jobs');
    while (!this.abort.signal.aborted) {
      const message = await consumer.next({ expires: 1_000 }).catch((error: unknown) => {
        this.options.logger.warn({ err: error }, 'taking a job failed; trying again');
        return null;
      });
      if (message) await this.handle(message, store);
    }
  }

  private async handle(message: JsMsg, store: ObjectStore): Promise<void> {
    const parsed = buildJobSchema.safeParse(message.json());
    if (!parsed.success) {
      this.options.logger.error({ issues: parsed.error.issues }, 'a build job this builder cannot read; leaving it to the control plane');
      message.term();
      return;
    }
    const job = parsed.data;
    const log = this.options.logger.child({ buildId: job.buildId, module: job.module, commit: job.commit });
    log.info({ delivery: message.info.deliveryCount }, 'building');
    const heartbeat = setInterval(() => message.working(), this.options.heartbeatMs);
    let outcome: BuildOutcome;
    try {
      const digest = await this.build(job, store);
      outcome = { outcome: 'built', buildId: job.buildId, module: job.module, commit: job.commit, digest, bases: job.bases, builder: this.name };
      log.info({ digest }, 'built');
    } catch (error) {
      if (error instanceof NotNow) {
        clearInterval(heartbeat);
        log.warn({ why: error.message }, 'cannot build now; the job goes back to the queue');
        message.nak(2_000);
        return;
      }
      const failure = error instanceof JobFailed ? error : new JobFailed((error as Error).message);
      // The reason says what the recipe said last, not only how it ended ("exited with 2").
      const said = lastLines(failure.output);
      outcome = { outcome: 'failed', buildId: job.buildId, module: job.module, commit: job.commit, reason: said ? `${failure.message}: ${said}` : failure.message, output: failure.output.slice(-OUTPUT_TAIL), builder: this.name };
      log.warn({ reason: failure.message }, 'build failed');
    } finally {
      clearInterval(heartbeat);
    }
    // Stated before the job is settled: a builder dying in between builds it again, and the
    // control plane records one outcome per build.
    await jetstream(this.nc).publish(buildOutcomeSubject(this.options.prefix, outcome.outcome), JSON.stringify(outcome), { msgID: `${job.buildId}:${outcome.outcome}` });
    message.ack();
  }

  private async cloneUrl(source: SourceRef): Promise<string> {
    if ('url' in source) return source.url;
    // The address is composed now, from where the seat's holder runs (ADR 0111): never recorded.
    try {
      const reply = await this.nc.request(cloneBaseSubject(this.options.prefix, source.seat), JSON.stringify({ repository: source.repository }), { timeout: 5_000 });
      const { base } = reply.json<{ base: string }>();
      return `${base.replace(/\/$/, '')}/${source.repository}`;
    } catch (error) {
      if (error instanceof NoRespondersError || (error as Error).name === 'NoRespondersError' || (error as Error).name === 'TimeoutError') {
        throw new NotNow(`no holder of ${source.seat} answered where it serves ${source.repository}`);
      }
      throw new NotNow(`asking ${source.seat}'s holder for ${source.repository}: ${(error as Error).message}`);
    }
  }

  private async build(job: BuildJob, store: ObjectStore): Promise<string> {
    const work = await mkdtemp(join(this.options.workDir ?? tmpdir(), `build-${job.module}-`));
    try {
      const url = await this.cloneUrl(job.source);
      const checkout = join(work, 'src');
      await runCommand('git', ['clone', '--quiet', '--no-checkout', url, checkout], work).catch((error: JobFailed) => {
        throw new JobFailed(`cloning ${url} failed`, error.output);
      });
      await runCommand('git', ['-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--detach', job.commit], checkout).catch((error: JobFailed) => {
        throw new JobFailed(`commit ${job.commit} is not in ${url}`, error.output);
      });
      const env: Record<string, string> = { MESH_MODULE: job.module, MESH_COMMIT: job.commit, MESH_BASES: join(work, 'bases') };
      for (const base of job.bases) {
        const into = join(work, 'bases', base.name.replace(/[^A-Za-z0-9._-]/g, '_'));
        if (!(await fetchArtifact(store, base.digest, into))) throw new JobFailed(`base ${base.name} (${base.digest}) is not in the artifact store`);
        env[baseVariable(base.name)] = into;
      }
      // A job from a manifest registered before paths were checked at registration: the build still stays in its checkout.
      const outside = relativePathProblem(job.path, { dotIsPlace: true }) ?? relativePathProblem(job.output, { dotIsPlace: true });
      if (outside) throw new JobFailed(`the module's source path ${JSON.stringify(job.path)} or output ${JSON.stringify(job.output)} ${outside}: a build runs, and its artifact is taken, inside its checkout`);
      const dir = resolve(checkout, job.path);
      // A folder the commit does not have would end in `spawn sh ENOENT`: say what is missing and where it looked.
      if (!(await stat(dir).then((s) => s.isDirectory()).catch(() => false))) {
        throw new JobFailed(`the source has no folder ${job.path} at commit ${job.commit} (looked in ${url}${job.ref ? `, ref ${job.ref},` : ''} for ${job.path}): the module's source path is not in that commit`);
      }
      // `set -u`: a recipe naming a base it was not handed stops there, with that reason; there is no default base.
      const result = await runCommand('sh', ['-c', `set -u\n${job.recipe}`], dir, env).catch((error: JobFailed) => {
        throw new JobFailed(`the recipe failed: ${error.message}`, error.output);
      });
      const output = resolve(dir, job.output);
      if (!(await stat(output).then((s) => s.isDirectory()).catch(() => false))) throw new JobFailed(`the recipe left no ${job.output} folder`, result);
      return await storeArtifact(store, output, `${job.module} at ${job.commit}`);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
}

/** Runs a command; resolves with its combined output, or rejects with a JobFailed carrying it. `timeoutMs`: killed after that long. */
const runCommand = (command: string, args: string[], cwd: string, env: Record<string, string> = {}, timeoutMs?: number): Promise<string> =>
  new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...(timeoutMs ? { timeout: timeoutMs, killSignal: 'SIGKILL' as const } : {}) });
    let output = '';
    const take = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-OUTPUT_TAIL * 4);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.once('error', (error) => reject(new JobFailed(error.message, output)));
    child.once('close', (code, signal) => (code === 0 ? resolvePromise(output) : reject(new JobFailed(signal ? `killed by ${signal}` : `exited with ${code}`, output))));
  });
