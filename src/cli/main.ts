import { ValidationError } from '../errors.js';
import { FOLDING_NODE_FLAGS } from '../projections/runtime.js';
import { agentCommand } from './agent.js';
import { assignCommand, unassignCommand } from './assign.js';
import { auditCommand } from './audit.js';
import { buildCommand, graphCommand } from './build.js';
import { builderCommand } from './builder.js';
import { controllerCommand } from './controller.js';
import { devCommand } from './dev.js';
import { eventsCommand } from './events.js';
import { logCommand } from './log.js';
import { historyCommand } from './history.js';
import { operatorCommand } from './operator.js';
import { moduleCommand } from './module.js';
import { nodeCommand } from './node.js';
import { projectionsCommand } from './projections.js';
import { reportError } from './output.js';
import { seatCommand, seatsCommand } from './seats.js';
import { statusCommand } from './status.js';

const USAGE = `mesh — the mesh control plane

usage:
  mesh dev up|down|status [--json]     start, stop or describe the local stack (NATS + PostgreSQL)
  mesh log [--since SEQ] [--aggregate A] [--type T] [--follow] [--json]
                                       print the mesh log: every mesh change, in order
                                       (also --actor A, --correlation ID, --after TIME, --before TIME)
  mesh log void SEQ --reason "…"       let every reader pass a commit that does not read or verify (an operator's signed command)
  mesh history AGGREGATE               everything that happened to a node, module, seat or assignment
  mesh operator key NAME | add NAME --key PUBLIC-KEY | revoke NAME | list
                                       operators and the keys their commands are signed with
  mesh audit verify [--controller-key KEY|FILE]
                                       re-check from seq 1 every link and writer signature, envelope, operator signature and who added each operator
  mesh module register <manifest.json> [--source URL|SEAT:OWNER/REPO[@REF]]
  mesh module list | show NAME         the catalogue: every module's newest definition
  mesh seats                           every seat, its scope, what it delivers, its holder
  mesh events dangling                 consumed events no registered module emits (a fault), and emits nobody consumes
  mesh status                          the overview: projections, nodes and what they run, unheld seats, refusals
  mesh seat handover SEAT --to NODE/MODULE [--from NODE/MODULE|none]
  mesh seat rename SEAT NEW-NAME       the old name keeps resolving
  mesh node add NAME [--root PATH] | list | show NAME
  mesh assign MODULE NODE [--hold SEAT]… [--pin REQ=NODE/MODULE]… [--set NAME=VALUE]… [--place DIR=PATH]…
  mesh unassign MODULE NODE
  mesh controller                      run the control plane in the foreground (mesh dev up runs it for you)
  mesh module moved MODULE COMMIT      its repository and branch moved (what the mesh-git holder's pushed says)
  mesh module rollout MODULE roll-out|record   what a new version of it does to its nodes
  mesh module keep MODULE --reason TEXT   what its nodes run is intended, though its source moved or its newest build failed
  mesh build MODULE [--register-only]  submit a build to mesh-build-machine; says what will roll out, and where
  mesh builder [--work DIR]            take build jobs as a holder of mesh-build-machine, in the foreground
  mesh graph [MODULE] [--reaches MODULE] [--stale]   the module graph: versions, edges, what must be rebuilt
  mesh agent --node NAME [--state DIR] [--token T]
                                       run this machine's node agent in the foreground; stopping it leaves what runs running
  mesh projections status | rebuild NAME   each projection's version, checkpoint, lag, stall; force a blue/green rebuild

Every verb takes --json; commands take --command-id ID (a retry with the same id acts once).
Reads (log, seats, status, events dangling, node list|show, module list|show) wait until the projections have reached the
log's head, or --at-least SEQ (a command's reply says its seq), for MESH_READ_TIMEOUT_MS (10000).

Addresses come from MESH_NATS_URL and MESH_DATABASE_URL, else from the local stack. Reads log in to
PostgreSQL as mesh_reader with the password in MESH_PG_PASSWORD_FILE_READER (by default the local
stack's secrets folder, written by \`mesh dev up\`).`;

/** `mesh log | head`: once the reader has gone, there is no one left to print for. */
const endQuietlyWhenTheReaderGoes = (): void => {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(0);
  });
};

/** The node flags a verb wants its process run with: those that fold the log into projections. */
export const nodeFlagsFor = (argv: readonly string[]): readonly string[] =>
  argv[0] === 'controller' || (argv[0] === 'projections' && argv[1] === 'rebuild') ? FOLDING_NODE_FLAGS : [];

export const main = async (argv: string[]): Promise<number> => {
  endQuietlyWhenTheReaderGoes();
  const [verb, ...rest] = argv;
  const json = rest.includes('--json');
  try {
    switch (verb) {
      case 'dev':
        return await devCommand(rest);
      case 'log':
        return await logCommand(rest);
      case 'history':
        return await historyCommand(rest);
      case 'operator':
        return await operatorCommand(rest);
      case 'audit':
        return await auditCommand(rest);
      case 'module':
        return await moduleCommand(rest);
      case 'events':
        return await eventsCommand(rest);
      case 'seats':
        return await seatsCommand(rest);
      case 'status':
        return await statusCommand(rest);
      case 'seat':
        return await seatCommand(rest);
      case 'node':
        return await nodeCommand(rest);
      case 'assign':
        return await assignCommand(rest);
      case 'unassign':
        return await unassignCommand(rest);
      case 'build':
        return await buildCommand(rest);
      case 'builder':
        return await builderCommand(rest);
      case 'graph':
        return await graphCommand(rest);
      case 'controller':
        return await controllerCommand(rest);
      case 'projections':
        return await projectionsCommand(rest);
      case 'agent':
        return await agentCommand(rest);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return verb === undefined ? 2 : 0;
      default:
        throw new ValidationError(`unknown verb "${verb}"; the verbs are: dev, log, history, audit, operator, module, events, seats, seat, status, node, assign, unassign, build, builder, graph, projections, controller, agent (see \`mesh help\`)`, { field: 'verb' });
    }
  } catch (error) {
    return reportError(error, json);
  }
};
