import { isWithin, placementProblem } from '../host-paths.js';
import type { MeshState } from '../mesh/state.js';
import { DEFAULT_NODE_ROOT } from '../nodes/events.js';
import { nodeNamed } from '../nodes/state.js';
import type { Problem } from '../refusal.js';
import { quotedPath } from '../catalogue/paths.js';
import { assignmentsOn } from './state.js';

// `--place DIR=PATH`: where an operator puts a module's directory on a node. The agent makes it
// the module's (its owner and mode), so it is a folder of the module's own — none of the machine's
// (src/domain/host-paths.ts), not another module's folder nor the mesh's own under the node's
// root, and not inside or around a directory another module on that node already has.

export const placeProblems = (state: MeshState, command: { module: string; node: string; placements: Record<string, string> }): Problem[] => {
  const root = nodeNamed(state.nodes, command.node)?.root ?? DEFAULT_NODE_ROOT;
  const others = assignmentsOn(state.assignments, command.node)
    .filter((a) => a.module !== command.module)
    .flatMap((a) => a.resolutions.flatMap((r) => (r.answer.kind === 'directory' ? [{ module: a.module, requirement: r.requirement, path: r.answer.path }] : [])));
  return Object.entries(command.placements).flatMap(([name, path]): Problem[] => {
    const what = `--place ${name}`;
    const remedy = `place it in a folder of its own on ${command.node}, e.g. /srv/${command.module}/${name}, or leave it out: it is then ${root}/${command.module}/${name}`;
    const problem = placementProblem(path, { root, module: command.module });
    if (problem) return [{ what, why: `${quotedPath(path)} ${problem}: a placed directory is made its module's (its owner and mode), so it is a folder of the module's own`, remedy }];
    const other = others.find((o) => isWithin(path, o.path) || isWithin(o.path, path));
    if (other) {
      const how = path === other.path ? 'is' : isWithin(path, other.path) ? 'is inside' : 'holds';
      return [{ what, why: `${quotedPath(path)} ${how} ${other.module}'s directory ${other.requirement} on ${command.node} (${other.path}): a directory is one module's`, remedy }];
    }
    return [];
  });
};
