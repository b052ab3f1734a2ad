// The projections' names, in the catalogue's order, without loading the projections: what the
// CLI's definition (`mesh projections rebuild --help`) lists. names.unit.test.ts holds it to the
// catalogue (catalogue.ts), so a projection added there and not here fails the suite.
export const MESH_PROJECTION_NAMES = ['audit', 'nodes', 'modules', 'seats', 'assignments', 'builds', 'facts', 'holds', 'operators', 'declarations', 'routes', 'secrets', 'trust'] as const;
