import { execa } from 'execa';
import type { AgentTimings } from './settings.js';
import { tail } from './outcome.js';

// The Docker engine, through the `docker` CLI. Containers are used only where an engine answers;
// elsewhere what needs one is held with the engine's own words, and asked again a little later.

export type EngineAnswer = { ok: true } | { ok: false; reason: string };

export class DockerEngine {
  private last: { at: number; answer: EngineAnswer } | undefined;

  constructor(private readonly timings: Pick<AgentTimings, 'dockerProbeMs'>) {}

  async answers(): Promise<EngineAnswer> {
    if (this.last && Date.now() - this.last.at < this.timings.dockerProbeMs) return this.last.answer;
    const result = await execa('docker', ['info', '--format', '{{.ServerVersion}}'], { reject: false, timeout: 10_000, stdin: 'ignore' });
    const answer: EngineAnswer =
      result.exitCode === 0
        ? { ok: true }
        : { ok: false, reason: `no Docker engine answers: ${result.code === 'ENOENT' ? 'the docker CLI is not installed' : tail(String(result.stderr || result.shortMessage), 200)}` };
    this.last = { at: Date.now(), answer };
    return answer;
  }

  /** Runs `docker …`; throws with docker's own message when it fails. */
  async run(args: string[]): Promise<string> {
    const result = await execa('docker', args, { reject: false, timeout: 120_000, stdin: 'ignore' });
    if (result.exitCode !== 0) throw new Error(`docker ${args[0]} failed: ${tail(String(result.stderr || result.shortMessage), 300)}`);
    return String(result.stdout).trim();
  }
}

interface ContainerSpec {
  user: string | null;
  env: Record<string, string>;
  envFiles: { path: string }[];
  mounts: { source: string; target: string; readOnly: boolean }[];
  ports?: { port: number; protocol: 'tcp' | 'udp' }[];
  image: string;
  command: string[] | null;
}

/** `docker run` options and arguments for a declared container or run-once step. */
export const dockerRunArguments = (spec: ContainerSpec): string[] => [
  ...(spec.user ? ['--user', spec.user] : []),
  ...spec.envFiles.flatMap((f) => ['--env-file', f.path]),
  ...Object.entries(spec.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
  ...spec.mounts.flatMap((m) => ['--volume', `${m.source}:${m.target}${m.readOnly ? ':ro' : ''}`]),
  // Host port requirements record the software port; this node publishes it as the same port.
  ...(spec.ports ?? []).flatMap((p) => ['--publish', `${p.port}:${p.port}/${p.protocol}`]),
  spec.image,
  ...(spec.command ?? []),
];
