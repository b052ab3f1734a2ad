import { devStackDir, loadConfig } from '../config.js';
import { ValidationError } from '../errors.js';
import { stackDown, stackPorts, stackStatus, stackUp, type StackStatus } from '../dev/stack.js';
import { parseFlags } from './flags.js';
import { output, say } from './output.js';

export const devCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(args, { json: { type: 'boolean', default: false } }, 1);
  const out = output(values.json ?? false);
  const config = loadConfig();
  const dir = devStackDir();
  const options = {
    dir,
    ports: stackPorts(dir),
    meshName: config.meshName,
    actor: config.actor,
    logStream: config.logStream,
    logSubjectPrefix: config.logSubjectPrefix,
    say: out.json ? () => undefined : say,
  };
  switch (positionals[0]) {
    case 'up': {
      const status = await stackUp(options);
      if (out.json) out.data(status);
      else {
        printStatus(status);
        out.line('');
        out.line('the mesh log:   npx mesh log            (follow it: npx mesh log --follow)');
        out.line('stop the stack: npx mesh dev down');
      }
      return 0;
    }
    case 'down': {
      const stopped = await stackDown(options);
      if (out.json) out.data({ stopped });
      return 0;
    }
    case 'status': {
      const status = await stackStatus(options);
      if (out.json) out.data(status);
      else printStatus(status);
      // Absence is not health: a stack that is not fully up says so in its exit code too.
      return status.nats.running && status.postgres.running && status.controller.running && status.log && !('error' in status.log) ? 0 : 1;
    }
    default:
      throw new ValidationError(`mesh dev needs one of: up, down, status (got ${positionals[0] ?? 'nothing'})`, { field: 'verb' });
  }
};

const printStatus = (status: StackStatus): void => {
  const line = (text: string): void => void process.stdout.write(`${text}\n`);
  line(`stack data:  ${status.dir}`);
  line(`nats-server: ${status.nats.running ? `running, pid ${status.nats.pid}, ${status.nats.url} (monitor :${status.nats.monitorPort})` : `not running (${status.nats.url})`}`);
  line(`controller:  ${status.controller.running ? `running, pid ${status.controller.pid} (log ${status.controller.logFile})` : 'not running'}`);
  line(`postgresql:  ${status.postgres.running ? `running, pid ${status.postgres.pid}, ${status.postgres.url}` : `not running (${status.postgres.url})`}`);
  if (!status.log) line('mesh log:    unknown (NATS is not running)');
  else if ('error' in status.log) line(`mesh log:    unavailable: ${status.log.error}`);
  else line(`mesh log:    stream ${status.log.stream}, ${status.log.messages} commits, seq ${status.log.firstSeq}–${status.log.lastSeq}, last at ${status.log.lastTime}`);
};
