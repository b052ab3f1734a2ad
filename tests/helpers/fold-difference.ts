import { deserialize, serialize } from 'node:v8';

// Maps and Sets V8 decodes are made in the process's realm; jest runs a test in a realm of its own.
const decoded = deserialize(serialize({ map: new Map(), set: new Set() })) as { map: object; set: object };
const isMap = (value: object): value is Map<unknown, unknown> => value instanceof Map || value instanceof (decoded.map.constructor as MapConstructor);
const isSet = (value: object): value is Set<unknown> => value instanceof Set || value instanceof (decoded.set.constructor as SetConstructor);

/**
 * Where two folds differ (undefined: nowhere): every Map and Set in the same order, every array
 * and object with the same fields. (V8's own bytes are no measure: an array it decoded encodes
 * differently from an equal one built by push.)
 */
export const foldDifference = (a: unknown, b: unknown, path = 'state'): string | undefined => {
  if (a === b) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return Object.is(a, b) ? undefined : `${path}: ${String(a)} against ${String(b)}`;
  if (isMap(a) || isSet(a)) {
    if (!(isMap(a) ? isMap(b) : isSet(b)) || a.size !== (b as Set<unknown>).size) return `${path}: a ${a.constructor.name} of ${a.size} against ${String(b)}`;
    const right = (b as Map<unknown, unknown>).entries();
    let i = 0;
    for (const [key, value] of a.entries()) {
      const [otherKey, otherValue] = right.next().value as [unknown, unknown];
      i++;
      const found = foldDifference(key, otherKey, `${path} key #${i}`) ?? foldDifference(value, otherValue, `${path}.${String(key)}`);
      if (found) return found;
    }
    return undefined;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return `${path}: an array against an object`;
  const left = Object.keys(a);
  const right = Object.keys(b);
  if (left.length !== right.length) return `${path}: fields ${left.join(',')} against ${right.join(',')}`;
  for (let i = 0; i < left.length; i++) {
    const key = left[i] as string;
    if (key !== right[i]) return `${path}: field ${key} against ${String(right[i])}`;
    const found = foldDifference((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
};
