import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb, AT_OPTION, PLAN_OPTION, WIDE_OPTION } from '../verbs.js';

export const defineNode = (mesh: CommandUnknownOpts): void => {
  const node = group(mesh, 'node', 'the machines of the mesh');
  verb(node, 'add', { summary: 'add a machine to the mesh', example: ['mesh node add lab1', 'mesh node add lab1 --root /srv/mesh --address lab1.example'], exits: [3, 4, 6] })
    .argument('<name>', 'the node: letters, digits and -')
    .option('--root <path>', 'where its agent keeps what it runs (default /var/lib/mesh)')
    .option('--address <host>', 'the host it is reached at')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../node.js')).nodeAdd));
  verb(node, 'list', { summary: 'every node, its root and what it is told to run', example: 'mesh node list', exits: [6, 7] })
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../node.js')).nodeList));
  verb(node, 'show', { summary: 'one node: what it runs, the seats it holds, what it holds back and why, its last facts', example: ['mesh node show alpha --json', 'mesh node show alpha --at 2026-12-04T09:00:00Z'], exits: [5, 6, 7] })
    .argument('<name>', 'the node')
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...AT_OPTION)
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../node.js')).nodeShow));
  verb(node, 'cordon', { summary: 'the node takes no new assignment; what it runs keeps running', example: 'mesh node cordon lab1', exits: [3, 4, 5, 6] })
    .argument('<name>', 'the node')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../node.js')).nodeCordon));
  verb(node, 'uncordon', { summary: 'the node takes new assignments again', example: 'mesh node uncordon lab1', exits: [3, 4, 5, 6] })
    .argument('<name>', 'the node')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../node.js')).nodeUncordon));
  verb(node, 'domain', {
    summary: "the DNS domain the node's public names are under: a route web of a module on it is web.DOMAIN; its modules' routes are granted their names again",
    example: 'mesh node domain lab1 example.org',
    exits: [3, 4, 5, 6],
  })
    .argument('<name>', 'the node')
    .argument('<domain>', 'a DNS name in lower case, e.g. example.org')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../node.js')).nodeDomain));
  verb(node, 'remove', {
    summary: 'take a node out of the mesh: refused while modules are assigned to it, unless --drain unassigns each first; its bus identity and tokens are retired',
    example: ['mesh node remove lab1', 'mesh node remove lab1 --drain', 'mesh node remove lab1 --drain --plan'],
    exits: [3, 4, 5, 6],
  })
    .argument('<name>', 'the node')
    .option('--drain', 'unassign every module on it first (each its own command and event), then remove it')
    .option('--command-id <id>', 'a retry with the same id acts once (with --drain, each step is <id>.<step>)')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../node.js')).nodeRemove));
  verb(node, 'token', { summary: 'an enrolment token for a node\'s agent, shown once', example: ['mesh node token --node lab1 --ttl 2h', 'MESH_ENROL_TOKEN=$(mesh node token --node lab1) mesh agent --node lab1'], exits: [3, 6] })
    .option('--node <name>', 'the only node the token may join as (default: any)')
    .option('--ttl <duration>', 'how long the token stays good, from 1s to 30d', '1h')
    .option('--command-id <id>', 'a retry with the same id is refused: the secret was shown once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../node.js')).nodeToken));
};
