import { DeclarationPublisher } from '../controller/declaration-publisher.js';
import type { Overview } from '../controller/overview.js';
import { refusalOvercome } from '../domain/declarations/events.js';
import { meshEventRegistry } from '../domain/registry.js';
import { meshProjections } from '../projections/catalogue.js';
import { CommitReader } from '../projections/commit-reader.js';
import { readRefusals, type StatedRefusal } from '../projections/mesh/declarations.js';
import { readNodesWithModules } from '../projections/mesh/nodes.js';
import { notKnownFromProjections, OVERVIEW_PROJECTIONS } from '../projections/mesh/overview.js';
import { unheldMeshSeats } from '../projections/mesh/seats.js';
import { allHealthy, projectionsStatus, type BuildState } from '../projections/status.js';
import { output, proseLine, say, table, type Output } from './output.js';
import { durationFlag } from './flags.js';
import { atLeastFlag, withReads } from './reads.js';
import { machineOverview } from './machine-overview.js';
import { atFlag, withMeshAt } from './at.js';
import { ValidationError } from '../errors.js';

// `mesh status`: the overview. What each projection has folded, each node and what it is told to
// run, the seats nobody holds, and the declarations the controller could not compose. Absence is
// not health: it says what it does not know, and exits 1 whenever the mesh is not doing what it
// was told — a stalled, lagging or unbuilt projection, or a declaration refused and not since
// replaced by one that was sent.

interface Refusal extends StatedRefusal {
  /** a declaration derived after the refused attempt has been published since; null: NODES could not be read */
  resolved: boolean | null;
}

/** The machines when the projections they are read from are not built: nothing judged, nothing claimed. */
const NOT_JUDGED: Overview & { unknown: string[] } = { healthy: false, problems: [], notKnown: [], held: [], nodes: [], seats: [], unknown: [] };

const describeProjection = (s: BuildState): string => {
  const version = s.version === undefined ? `(code v${s.codeVersion})` : `v${s.version}`;
  const lag = s.lagCommits === 0 ? 'caught up' : `${s.lagCommits} behind${s.lagSeconds === null ? '' : ` (${s.lagSeconds.toFixed(1)} s)`}`;
  const stall = s.stall
    ? `; STALLED at seq ${s.stall.seq} (${s.stall.type}${s.stall.sqlstate ? `, SQLSTATE ${s.stall.sqlstate}` : ''}) since ${s.stall.since.toISOString()}, ${s.stall.attempts} ${s.stall.attempts === 1 ? 'try' : 'tries'}${s.stall.nextAttemptAt ? `, next at ${s.stall.nextAttemptAt.toISOString()}` : ''}: ${s.stall.error}`
    : '';
  const moving = s.notMoving ? `; NOT MOVING: nothing applied since ${s.notMoving.since.toISOString()}` : '';
  return `${s.projection.padEnd(12)} ${(s.notMoving ? 'NOT MOVING' : s.status).padEnd(9)} ${version.padEnd(6)} at seq ${s.checkpoint} of ${s.headSeq}, ${lag}${stall}${moving}`;
};


/** The longest `--wait`: past that, something is wrong that waiting will not mend. */
const WAIT_MAX = { ms: 30 * 60_000, written: '30m', why: 'a mesh that is not doing what it was told after that is stuck, and the overview says why' } as const;

interface StatusFlags {
  json?: true;
  atLeast?: string;
  output?: string;
  wait?: string;
  at?: string;
}

export const statusCommand = async (values: StatusFlags): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  const at = atFlag(values.at);
  if (at) {
    if (values.wait !== undefined) throw new ValidationError('--at asks about the past and --wait about the future: give one of them', { field: '--at' });
    return withMeshAt(at, async (mesh) => (await import('./at-reads.js')).statusAt(out, mesh));
  }
  if (values.wait === undefined) return statusOnce(out, values);
  // --wait: the overview is asked again, quietly, until the mesh does what it was told or the
  // time is up; only the last answer is printed (an agent still joining is not yet a fault).
  const until = Date.now() + durationFlag('--wait', values.wait, WAIT_MAX);
  say(`waiting up to ${values.wait} for the mesh to do what it was told…`);
  for (;;) {
    const lines: string[] = [];
    const quiet: Output = { json: out.json, wide: out.wide, line: (text) => void (out.json ? undefined : lines.push(text)), data: (value) => void lines.push(JSON.stringify(value)) };
    const last = Date.now() >= until;
    try {
      const code = await statusOnce(quiet, values);
      if (code === 0 || last) {
        for (const line of lines) process.stdout.write(`${line}\n`);
        return code;
      }
    } catch (error) {
      if (last) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
};

const statusOnce = (out: Output, values: StatusFlags): Promise<number> => {
  const projections = meshProjections();
  return withReads(
    projections.map((p) => p.name),
    { atLeast: atLeastFlag(values.atLeast), readBehind: true },
    async (session) => {
      const { config, nc, db, schemas, behind } = session;
      const reader = new CommitReader(nc, { stream: config.logStream, subjectPrefix: config.logSubjectPrefix, registry: meshEventRegistry() });
      const states = await projectionsStatus(db, schemas, reader, projections);
      const serving = (name: string) => states.some((s) => s.projection === name && s.status === 'serving');
      const unknown: string[] = [];
      if (behind) unknown.push(`the tables below are older than the log: ${behind.message}`);

      const nodes = serving('nodes') ? await readNodesWithModules(session, { assignments: serving('assignments') }) : [];
      unknown.push(...notKnownFromProjections(serving, nodes));
      const unheld = serving('seats') ? await unheldMeshSeats(session) : [];

      const refusals: Refusal[] = [];
      if (serving('declarations')) {
        const publisher = new DeclarationPublisher(nc, { nodesStream: config.nodesStream, prefix: config.subjectPrefix });
        for (const refusal of await readRefusals(session)) {
          // Refused, unless a declaration derived later than the refused attempt has been published since.
          let resolved: boolean | null = null;
          try {
            resolved = refusalOvercome(refusal, await publisher.lastPublished(refusal.node, { fresh: true }));
          } catch {
            unknown.push(`whether ${refusal.node}'s refused declaration has been replaced since: the ${config.nodesStream} stream could not be read`);
          }
          refusals.push({ ...refusal, resolved });
        }
      }

      const refused = refusals.filter((r) => r.resolved !== true);
      // The machines: heard from, applying their newest declaration, nothing held, refused or crash-looping.
      const missing = OVERVIEW_PROJECTIONS.filter((name) => !serving(name));
      const machines = missing.length === 0 ? await machineOverview(session) : NOT_JUDGED;
      const healthy = allHealthy(states) && !behind && refused.length === 0 && machines.healthy;
      if (out.json) {
        out.data({
          ok: healthy,
          projections: states,
          nodes: nodes.map((n) => ({ node: n.name, enrolled: n.enrolled, cordoned: n.cordoned, modules: n.modules, ...machines.nodes.find((m) => m.node === n.name) })),
          unheldSeats: unheld,
          refusals,
          machines: machines.problems,
          danglingConsumes: machines.dangling ?? [],
          sources: machines.notKnown,
          unknown,
        });
        return healthy ? 0 : 1;
      }
      out.line('projections:');
      for (const state of states) proseLine(out, `  ${describeProjection(state)}`);
      if (nodes.length === 0) out.line('nodes: none');
      else {
        out.line('nodes:');
        table(out, ['NODE', 'AGENT', 'STATE', 'ASSIGNED'], nodes.map((node) => [node.name, node.enrolled ? 'enrolled' : 'not enrolled', node.cordoned ? 'cordoned' : 'ready', node.modules.join(', ') || '(nothing assigned)']), { indent: 2 });
      }
      proseLine(out, `mesh seats unheld: ${unheld.join(', ') || 'none'}`);
      if (machines.nodes.length > 0) {
        out.line('machines:');
        table(
          out,
          ['NODE', 'HEARD', 'DECLARATION', 'RUNNING'],
          machines.nodes.map((machine) => {
            const heldModules = [...new Set(machine.held.map((h) => h.module))].map((module) => `${module} (${machine.held.filter((h) => h.module === module).length})`);
            return [
              machine.node,
              machine.lastHeard ?? (machine.statusUnknown ? 'not known' : 'never'),
              `${machine.appliedSequence ?? '–'} applied of ${machine.declaredSequence ?? '–'}`,
              `${machine.running.map((r) => r.module).join(', ') || 'nothing'}${heldModules.length > 0 ? `; held: ${heldModules.join(', ')}` : ''}`,
            ];
          }),
          { indent: 2 },
        );
      }
      if (machines.problems.length > 0) out.line('not as told:');
      for (const problem of machines.problems) proseLine(out, `  ${problem}`);
      if (machines.notKnown.length > 0) out.line('sources:');
      for (const line of machines.notKnown) proseLine(out, `  ${line}`);
      if (refusals.length > 0) out.line('declarations refused (the node keeps its previous one):');
      for (const r of refusals) {
        const state = r.resolved === true ? 'since replaced' : r.resolved === false ? 'STILL REFUSED' : 'unknown whether replaced';
        proseLine(out, `  ${r.node} at seq ${r.seq} (${r.time}), ${state}: ${r.unresolved.map((u) => `${u.what}: ${u.why}`).join('; ')}`);
      }
      if (unknown.length > 0) out.line('not known:');
      for (const u of unknown) proseLine(out, `  ${u}`);
      out.line(healthy ? 'the mesh is doing what it was told' : 'the mesh is NOT doing what it was told (see above)');
      return healthy ? 0 : 1;
    },
  );
};
