// What a recipe needs that the mesh can see before a build starts, and what a failed one said.
// Recipes run under `sh` with `set -u` and are handed each base in MESH_BASE_<NAME>: a recipe
// reading a base its module's `build.on` does not name stops at that reference, so the build is
// refused at submission instead, naming the variable and where it looked.

/** `node-20-runtime` → `MESH_BASE_NODE_20_RUNTIME`: where the recipe finds a base it was handed. */
export const baseVariable = (name: string): string => `MESH_BASE_${name.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}`;

const BASE_REFERENCE = /\$\{?(MESH_BASE_[A-Za-z0-9_]+)/g;

/** The MESH_BASE_ variables a recipe reads that none of `on` would set, in order of first use. */
export const basesNotHanded = (recipe: string, on: readonly string[]): string[] => {
  const handed = new Set(on.map(baseVariable));
  return [...new Set([...recipe.matchAll(BASE_REFERENCE)].map((m) => m[1] as string))].filter((variable) => !handed.has(variable));
};

/** Why a module's build section cannot start, whatever the source holds; undefined when it can. */
export const recipeProblem = (build: { recipe: string; on: readonly string[] }): string | undefined => {
  if (build.recipe.trim() === '') return 'its build has no recipe (build.recipe is blank): there is nothing to run; write the command that builds it in build.recipe';
  const missing = basesNotHanded(build.recipe, build.on);
  if (missing.length === 0) return undefined;
  const looked = build.on.length > 0 ? `build.on hands ${build.on.map((b) => `${b} as ${baseVariable(b)}`).join(', ')}` : 'build.on names no base';
  return `its recipe reads ${missing.map((v) => `$${v}`).join(', ')}, and ${looked}; there is no default base, so the build would stop there: add the base to build.on (a module's name or an artifact's sha256 digest) and register the manifest again`;
};

/** The last lines a failed command printed, for its reason: what an operator reads first. */
export const lastLines = (output: string, count = 5, maxChars = 600): string => {
  const lines = output.split('\n').map((line) => line.trimEnd()).filter((line) => line.trim() !== '');
  const tail = lines.slice(-count).join(' | ');
  return tail.length > maxChars ? `…${tail.slice(-maxChars)}` : tail;
};
