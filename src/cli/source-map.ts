import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { projectRoot } from '../config.js';

// A one-shot verb runs from the bundle without loading its source map (loading it costs more than
// most verbs take): when it prints an internal error, it maps the stack's bundle positions to the
// TypeScript sources itself, from the map that lies beside the bundle.

const BUNDLE_FRAME = /(file:\/\/[^\s()]+\.mjs):(\d+):(\d+)/g;

const loadMap = (bundleUrl: string): { map: SourceMap; dir: string } | undefined => {
  const file = `${fileURLToPath(bundleUrl)}.map`;
  if (!existsSync(file)) return undefined;
  try {
    return { map: new SourceMap(JSON.parse(readFileSync(file, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]), dir: dirname(file) };
  } catch {
    return undefined;
  }
};

/** `stack` with each frame in a bundle that has a map beside it named by its source file, line and column; other frames as they are. */
export const sourceMappedStack = (stack: string): string => {
  const maps = new Map<string, ReturnType<typeof loadMap>>();
  return stack.replace(BUNDLE_FRAME, (frame, url: string, line: string, column: string) => {
    if (!maps.has(url)) maps.set(url, loadMap(url));
    const loaded = maps.get(url);
    const entry = loaded?.map.findEntry(Number(line) - 1, Number(column) - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number } | undefined;
    if (!loaded || !entry?.originalSource || entry.originalLine === undefined || entry.originalColumn === undefined) return frame;
    return `${relative(projectRoot, resolve(loaded.dir, entry.originalSource))}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
};
