import { closeSync, openSync } from 'node:fs';
import { execa } from 'execa';
import { backoff, type AgentTimings } from '../settings.js';
import { applied, crashLooping, exitDescription, type Outcome } from '../outcome.js';
import { describeProcess, stillRunning, terminate } from '../proc.js';
import type { RunningProcess } from '../records.js';
import type { SystemUser } from '../system-users.js';

// One long-running declared command, kept running. It is started detached, as the leader of its
// own process group, with its output in a file: the agent can exit, be killed or restart, and
// the process neither notices nor stops. A process that exits is started again after a delay that
// doubles per exit in a row; once it stays up for the stable period the count starts again.

export interface Launch {
  command: string[];
  env: Record<string, string>;
  user: SystemUser | null;
  logFile: string;
}

export interface SupervisorState {
  running: RunningProcess | null;
  restarts: number;
  lastExit: string | null;
}

export interface SupervisorHooks {
  /** the state changed: persist it */
  recorded(state: SupervisorState): void;
  /** the outcome may have changed (it started crash-looping, or stopped) */
  changed(reason: string): void;
}

export class Supervisor {
  private state: SupervisorState;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  /** settles when a child this supervisor spawned has exited and been reaped */
  private exited: Promise<void> = Promise.resolve();

  private launch: Launch | undefined;

  constructor(
    private readonly label: string,
    private readonly timings: AgentTimings,
    private readonly hooks: SupervisorHooks,
    initial: SupervisorState = { running: null, restarts: 0, lastExit: null },
  ) {
    this.state = { ...initial };
  }

  /** Watches the process a previous run of the agent started, if it is still that process. */
  adopt(): boolean {
    const running = this.state.running;
    if (!running) return false;
    if (!stillRunning(running)) {
      this.state = { ...this.state, running: null };
      this.hooks.recorded(this.state);
      return false;
    }
    // Not this agent's child: its exit is seen by watching /proc, and someone else reaps it.
    this.poll = setInterval(() => {
      if (stillRunning(running)) return;
      clearInterval(this.poll);
      this.poll = undefined;
      this.onExit('exited while the agent was not its parent (status unknown)');
    }, this.timings.adoptedPollMs);
    this.poll.unref();
    return true;
  }

  /** Running, or about to be restarted: nothing to start. */
  get active(): boolean {
    return this.state.running !== null || this.restartTimer !== undefined;
  }

  /**
   * Knows from now on how to (re)start it, and starts it unless it is active. An adopted process
   * learns this from the first pass after the agent's restart.
   */
  ensure(launch: Launch): void {
    this.launch = launch;
    if (!this.active) this.start();
  }

  private start(): void {
    const launch = this.launch;
    if (!launch) return;
    const startedAt = new Date();
    const child = spawnDetached(launch);
    // The agent may exit while this runs: the child must not hold its event loop open.
    child.unref();
    const running = child.pid === undefined ? undefined : describeProcess(child.pid, startedAt);
    this.state = { ...this.state, running: running ?? null };
    this.hooks.recorded(this.state);
    this.exited = child.then((result) => {
      this.onExit(exitDescription(result));
    });
  }

  outcome(): Outcome {
    const running = this.state.running;
    if (running && Date.now() - Date.parse(running.startedAt) >= this.timings.stableMs && this.state.restarts > 0) {
      this.state = { ...this.state, restarts: 0 };
      this.hooks.recorded(this.state);
    }
    if (this.state.restarts >= this.timings.crashLoopAfter) return crashLooping(this.state.restarts, this.state.lastExit ?? 'exits');
    return applied;
  }

  get pid(): number | undefined {
    return this.state.running?.pid;
  }

  /** Stops the process and waits for it to be gone; nothing restarts it afterwards. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.halt();
    if (this.state.running) await terminate(this.state.running, graceMs);
    await this.exited;
    this.state = { ...this.state, running: null };
    this.hooks.recorded(this.state);
  }

  /** Stops watching and leaves the process running: the agent is going away, what runs is not. */
  detach(): void {
    this.stopping = true;
    this.halt();
  }

  private halt(): void {
    clearTimeout(this.restartTimer);
    clearInterval(this.poll);
    this.restartTimer = undefined;
    this.poll = undefined;
  }

  private onExit(description: string): void {
    if (this.stopping) return;
    const running = this.state.running;
    const upFor = running ? Date.now() - Date.parse(running.startedAt) : 0;
    const restarts = upFor >= this.timings.stableMs ? 1 : this.state.restarts + 1;
    const wasLooping = this.state.restarts >= this.timings.crashLoopAfter;
    this.state = { running: null, restarts, lastExit: description };
    this.hooks.recorded(this.state);
    if (wasLooping !== restarts >= this.timings.crashLoopAfter) this.hooks.changed(`${this.label} ${description}`);
    // An adopted process that exits before a pass told the supervisor how to start it: the next
    // pass starts it (ensure).
    if (!this.launch) {
      this.hooks.changed(`${this.label} ${description}`);
      return;
    }
    const delay = backoff(restarts, this.timings.restartBackoffMs, this.timings.restartBackoffMaxMs);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.stopping) this.start();
    }, delay);
    this.restartTimer.unref();
  }
}

/** The process's output goes straight to its log file (a pipe would die with the agent). */
const spawnDetached = (launch: Launch) => {
  // execa passes any descriptor number through to spawn; its types name only 3 to 9.
  const log = openSync(launch.logFile, 'a', 0o600) as 3;
  try {
    const [file = '', ...args] = launch.command;
    return execa(file, args, {
      detached: true,
      cleanup: false,
      stdin: 'ignore',
      stdout: log,
      stderr: log,
      env: launch.env,
      extendEnv: false,
      cwd: '/',
      reject: false,
      ...(launch.user ? { uid: launch.user.uid, gid: launch.user.gid } : {}),
    });
  } finally {
    closeSync(log);
  }
};
