import { describe, expect, it } from '@jest/globals';
import { meshProjections } from './catalogue.js';
import { MESH_PROJECTION_NAMES } from './names.js';

describe("the projections' names the CLI lists", () => {
  it('are the catalogue\'s, in its order', () => {
    expect([...MESH_PROJECTION_NAMES]).toEqual(meshProjections().map((projection) => projection.name));
  });
});
