import { join } from 'node:path';
import { loadOperatorKey } from '../adapters/operator-keys.js';
import { devStackDir, loadConfig } from '../config.js';
import { openConsoleSession } from './console.js';
import { ValidationError } from '../errors.js';
import { portFromEnv, recordedClusterSize, stackDown, stackPorts, stackStatus, stackUp, type StackStatus } from '../dev/stack.js';
import { DEMO_NODES } from '../dev/demo.js';
import { output, say } from './output.js';


const devCommand = async (sub: 'up' | 'down' | 'status', values: { json?: true; demo?: true; cluster?: string }): Promise<number> => {
  const out = output(values.json ?? false);
  const config = loadConfig();
  const dir = devStackDir();
  const options = {
    dir,
    ports: stackPorts(dir),
    cluster: clusterFlag(values.cluster) ?? recordedClusterSize(dir),
    meshName: config.meshName,
    actor: config.actor,
    logStream: config.logStream,
    logSubjectPrefix: config.logSubjectPrefix,
    say: out.json ? () => undefined : say,
  };
  switch (sub) {
    case 'up': {
      const wasUp = (await stackStatus(options)).controller.running;
      const demo = values.demo ? { greeterPort: portFromEnv('MESH_DEMO_GREETER_PORT') ?? 18081, callerPort: portFromEnv('MESH_DEMO_CALLER_PORT') ?? 18082, postgresPort: portFromEnv('MESH_DEMO_POSTGRES_PORT') ?? 15532 } : undefined;
      const status = await stackUp({ ...options, ...(demo ? { demo } : {}) });
      const pageUrl = `http://127.0.0.1:${options.ports.http}/`;
      const health = demo ? await waitForHealth(pageUrl, out.json ? () => undefined : say, join(dir, 'operator.key')) : undefined;
      if (out.json) out.data({ ...status, page: pageUrl, ...(health ? { healthy: health.healthy, problems: health.problems } : {}) });
      else {
        printStatus(status);
        out.line('');
        if (status.demo) {
          if (wasUp && status.agents.length === DEMO_NODES.length) out.line('the mesh was already up; nothing new was raised.');
          out.line(health?.healthy ? 'the mesh is up, and doing what it was told.' : `the mesh is up, but not doing everything it was told:\n  ${health?.problems.join('\n  ')}`);
          out.line(`  the page:     ${pageUrl}`);
          out.line(`  the greeter:  ${status.demo.greeterUrl}    (alpha, holding front-desk)`);
          out.line(`  the caller:   ${status.demo.callerUrl}    (beta, requiring the greeter's greeting)`);
          out.line(`  the guestbook on beta signs in PostgreSQL on alpha (${status.demo.postgres}) with the login the vault made for it`);
          out.line('try next:');
          out.line('  npx mesh status          what every node runs, and anything not as told');
          out.line('  npx mesh seats           every seat and its holder');
          out.line('  npx mesh log --follow    every mesh change as it is recorded');
          out.line('stop it:      npx mesh dev down    (npm start brings the same mesh back from its log)');
        } else {
          out.line('the mesh log:   npx mesh log            (follow it: npx mesh log --follow)');
          out.line(`the page:       ${pageUrl}`);
          out.line('stop the stack: npx mesh dev down');
        }
      }
      return demo && !health?.healthy ? 1 : 0;
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
  }
};

/** --cluster: one server, or a cluster of three (JetStream needs a majority: two would survive nothing). */
const clusterFlag = (raw: string | undefined): number | undefined => {
  if (raw === undefined) return undefined;
  if (raw !== '1' && raw !== '3') throw new ValidationError(`--cluster ${raw}: the local stack runs 1 nats-server or a cluster of 3`, { field: 'cluster', value: raw });
  return Number(raw);
};

/** Waits, showing progress, until the controller's overview says the mesh does what it was told (or a minute passes). */
const waitForHealth = async (pageUrl: string, say: (line: string) => void, operatorKeyFile?: string): Promise<{ healthy: boolean; problems: string[] }> => {
  const deadline = Date.now() + 60_000;
  let last = '';
  let session: string | undefined;
  for (;;) {
    let overview: { healthy: boolean; problems: string[] } = { healthy: false, problems: ['the controller does not answer yet'] };
    try {
      let response = await fetch(`${pageUrl}api/overview`, { headers: session ? { authorization: `Bearer ${session}` } : {} });
      // The console asks for an operator's session (MESH_CONSOLE_AUTH=required): the stack's first operator opens one.
      if (response.status === 401 && operatorKeyFile) {
        session = (await openConsoleSession(new URL(pageUrl), loadOperatorKey(operatorKeyFile))).token;
        response = await fetch(`${pageUrl}api/overview`, { headers: { authorization: `Bearer ${session}` } });
      }
      const read = (await response.json()) as Partial<{ healthy: boolean; problems: string[] }>;
      if (Array.isArray(read.problems)) overview = { healthy: read.healthy === true, problems: read.problems };
    } catch {
      // not listening yet
    }
    if (overview.healthy || Date.now() > deadline) return overview;
    const now = `waiting for the mesh to settle: ${overview.problems.length} things not as told yet${overview.problems[0] ? ` (${overview.problems[0]})` : ''}`;
    if (now !== last) say(now);
    last = now;
    await new Promise((r) => setTimeout(r, 500));
  }
};

const printStatus = (status: StackStatus): void => {
  const line = (text: string): void => void process.stdout.write(`${text}\n`);
  line(`stack data:  ${status.dir}`);
  if (status.natsMembers) {
    for (const [i, member] of status.natsMembers.entries()) {
      line(`nats-server ${i + 1}/${status.natsMembers.length}: ${member.running ? `running, pid ${member.pid}, ${member.url}` : `not running (${member.url})`}`);
    }
  } else line(`nats-server: ${status.nats.running ? `running, pid ${status.nats.pid}, ${status.nats.url}` : `not running (${status.nats.url})`}`);
  line(`controller:  ${status.controller.running ? `running, pid ${status.controller.pid} (log ${status.controller.logFile})` : 'not running'}`);
  for (const agent of status.agents) line(`agent ${agent.node}: running, pid ${agent.pid} (log ${agent.logFile})`);
  line(`postgresql:  ${status.postgres.running ? `running, pid ${status.postgres.pid}, ${status.postgres.url}` : `not running (${status.postgres.url})`}`);
  if (!status.log) line('mesh log:    unknown (NATS is not running)');
  else if ('error' in status.log) line(`mesh log:    unavailable: ${status.log.error}`);
  else line(`mesh log:    stream ${status.log.stream}, ${status.log.messages} commits, seq ${status.log.firstSeq}–${status.log.lastSeq}, last at ${status.log.lastTime}`);
};

export const devUp = (values: { json?: true; demo?: true; cluster?: string }): Promise<number> => devCommand('up', values);
export const devDown = (values: { json?: true }): Promise<number> => devCommand('down', values);
export const devStatus = (values: { json?: true }): Promise<number> => devCommand('status', values);
