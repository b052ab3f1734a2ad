import { execa } from 'execa';

// The machine's service manager, as the agent speaks to it: systemctl's verbs, run as a command.
// The command is systemctl unless the agent is told another that answers the same verbs (a
// supervisor of a test's own, a wrapper on a machine without systemd); `MESH_SERVICE_MANAGER`
// names it, its words separated by spaces.

export interface UnitStatus {
  /** the manager knows the unit */
  exists: boolean;
  running: boolean;
  enabled: boolean;
}

export interface ServiceManager {
  /** what the manager is, for a reason a person reads */
  readonly name: string;
  status(unit: string): Promise<UnitStatus>;
  act(verb: 'start' | 'stop' | 'enable' | 'disable' | 'reload', unit: string): Promise<void>;
}

export const serviceManagerCommand = (env: NodeJS.ProcessEnv = process.env): string[] => (env.MESH_SERVICE_MANAGER?.trim() ? env.MESH_SERVICE_MANAGER.trim().split(/\s+/) : ['systemctl']);

export const commandServiceManager = (command: readonly string[]): ServiceManager => {
  const [program = 'systemctl', ...prefix] = command;
  const run = (args: string[]) => execa(program, [...prefix, ...args], { reject: false, timeout: 60_000, stdin: 'ignore' });
  const name = command.join(' ');
  return {
    name,
    async status(unit) {
      const load = await run(['show', '--property=LoadState', '--value', unit]);
      if (load.exitCode === undefined) throw new Error(`no service manager answers: ${name} ${load.code === 'ENOENT' ? 'is not installed' : `could not run (${load.shortMessage})`}`);
      if (load.exitCode !== 0) throw new Error(`${name} show ${unit} exited with status ${load.exitCode}: ${String(load.stderr).trim()}`);
      if (String(load.stdout).trim() !== 'loaded') return { exists: false, running: false, enabled: false };
      const [active, enabled] = await Promise.all([run(['is-active', unit]), run(['is-enabled', unit])]);
      return { exists: true, running: active.exitCode === 0, enabled: enabled.exitCode === 0 };
    },
    async act(verb, unit) {
      const result = await run([verb, unit]);
      if (result.exitCode !== 0) throw new Error(`${name} ${verb} ${unit} ${result.exitCode === undefined ? 'could not run' : `exited with status ${result.exitCode}`}: ${String(result.stderr || result.stdout).trim()}`);
    },
  };
};
