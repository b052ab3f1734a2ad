import type pg from 'pg';
import { DeclarationPublisher } from '../../src/controller/declaration-publisher.js';
import type { FactFeed } from '../../src/controller/http/fact-feed.js';
import { consoleSource, type ConsoleSource } from '../../src/controller/http/console/source.js';
import type { ProjectorSchemas } from '../../src/projections/control.js';
import type { BuildState } from '../../src/projections/status.js';
import type { TestMesh } from './test-mesh.js';

/** The console's reads for one test mesh, wired as the controller wires them: its pool, read schema, NODES, log and facts. */
export const testConsoleSource = (t: TestMesh, options: { pool: pg.Pool; schemas: ProjectorSchemas; projections: () => Promise<BuildState[]>; facts?: FactFeed }): ConsoleSource =>
  consoleSource({
    pool: options.pool,
    readSchema: options.schemas.read,
    publisher: new DeclarationPublisher(t.nc, { nodesStream: t.names.nodesStream, prefix: t.names.prefix }),
    statusSchema: `status_${t.names.prefix}`,
    heartbeatThresholdMs: 15_000,
    prefix: t.names.prefix,
    projections: options.projections,
    log: t.newLog(),
    logSource: { nc: t.nc, stream: t.names.logStream, subjectPrefix: t.names.logPrefix },
    recentFacts: () => options.facts?.latest() ?? [],
  });

/** A console that must not be read: a test of the API alone. */
export const unreadConsole: ConsoleSource = {
  home: () => Promise.reject(new Error('not read in this test')),
  node: () => Promise.reject(new Error('not read in this test')),
  module: () => Promise.reject(new Error('not read in this test')),
  seat: () => Promise.reject(new Error('not read in this test')),
  catalogue: () => Promise.reject(new Error('not read in this test')),
  projections: () => Promise.reject(new Error('not read in this test')),
  log: () => Promise.reject(new Error('not read in this test')),
};
