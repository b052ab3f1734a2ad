import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { pino } from 'pino';
import pg from 'pg';
import { projectRoot } from '../../src/config.js';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { LogWriter } from '../../src/adapters/eventlog/log-writer.js';
import { newIdentity } from '../../src/adapters/identity.js';
import { bootstrapControlPlane } from '../../src/controller/bootstrap.js';
import { Controller } from '../../src/controller/controller.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { controllerPermissions, type ControllerStreams } from '../../src/controller/permissions.js';
import { ReportIngester } from '../../src/controller/report-ingester.js';
import { declarationSchema } from '../../src/domain/declarations/declaration.js';
import { meshEventRegistry } from '../../src/domain/registry.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { scratchNats } from '../helpers/scratch-nats.js';
import { waitFor } from '../helpers/test-mesh.js';
import { reportFor } from './report-for.js';

const GOLDEN = join(projectRoot, 'fixtures', 'permissions', 'controller.json');
const PRODUCTION: ControllerStreams = { prefix: 'mesh', logStream: 'LOG', logPrefix: 'mesh.log', nodesStream: 'NODES', controlStream: 'CONTROL', eventsStream: 'EVENTS' };

describe("the controller's bus permissions", () => {
  it('name exactly the subjects in the golden file', () => {
    const actual = `${JSON.stringify(controllerPermissions(PRODUCTION), null, 2)}\n`;
    if (process.env.MESH_UPDATE_GOLDEN === '1' || !existsSync(GOLDEN)) writeFileSync(GOLDEN, actual);
    expect(actual).toBe(readFileSync(GOLDEN, 'utf8'));
  });

  describe('enforced by a server, while the controller declares and states facts', () => {
    const name = uniqueName('p');
    const streams: ControllerStreams = { prefix: name, logStream: `LOG_${name}`, logPrefix: `${name}.log`, nodesStream: `NODES_${name}`, controlStream: `CONTROL_${name}`, eventsStream: `EVENTS_${name}` };
    const permissions = controllerPermissions(streams);
    let server: Awaited<ReturnType<typeof scratchNats>>;
    let admin: NatsConnection;
    let controllerConnection: NatsConnection;
    const violations: string[] = [];

    beforeAll(async () => {
      const list = (subjects: string[]) => `[${subjects.map((s) => JSON.stringify(s)).join(', ')}]`;
      server = await scratchNats('permissions', {
        extraConfig: [
          'authorization {',
          '  users: [',
          '    { user: admin, password: admin }',
          `    { user: controller, password: controller, permissions: { publish: ${list(permissions.publish)}, subscribe: ${list(permissions.subscribe)}, allow_responses: true } }`,
          '  ]',
          '}',
        ].join('\n'),
      });
      admin = await connectNats(server.url, { name: 'admin', user: 'admin', pass: 'admin' });
      controllerConnection = await connectNats(server.url, { name: 'controller', user: 'controller', pass: 'controller', persistent: true });
      void (async () => {
        for await (const status of controllerConnection.status()) if (status.type === 'error') violations.push(String(status.error));
      })();
    });
    afterAll(async () => {
      await controllerConnection?.close();
      await admin?.close();
      await server?.remove();
    });

    it('publishes declarations and facts with no permission refused', async () => {
      const registry = meshEventRegistry();
      const key = newIdentity();
      const writer = new LogWriter(controllerConnection, { stream: streams.logStream, key });
      const controllerLog = new JetStreamEventLog(controllerConnection, { stream: streams.logStream, subjectPrefix: streams.logPrefix, registry, writer });
      await bootstrapControlPlane(controllerConnection, controllerLog, { stream: streams.logStream, subjectPrefix: streams.logPrefix, meshName: name, actor: 'controller', controllerKey: key.publicKey });
      // The commands below are decided as a second controller process would: its own writer, the same key.
      const operator = new MeshService(new JetStreamEventLog(admin, { stream: streams.logStream, subjectPrefix: streams.logPrefix, registry, writer: new LogWriter(admin, { stream: streams.logStream, key }) }));
      let n = 0;
      const run = (command: Parameters<MeshService['execute']>[0]) => operator.execute(command, { commandId: `${name}-${++n}`, actor: 'operator:test' });
      await run({ type: 'register-module', manifest: fixtureManifest('distribution') });
      await run({ type: 'add-node', node: 'lab1' });
      await run({ type: 'assign', module: 'distribution', node: 'lab1', hold: ['mesh-artifact-store'], pins: {}, values: {}, placements: {} });

      const controller = new Controller(controllerConnection, controllerLog, {
        names: { nodesStream: streams.nodesStream, controlStream: streams.controlStream, prefix: streams.prefix },
        actor: 'controller',
        logger: pino({ level: 'silent' }),
      });
      await controller.start();
      const pool = new pg.Pool({ connectionString: process.env.MESH_DATABASE_URL, max: 2 });
      const ingester = new ReportIngester(controllerConnection, new JetStreamEventLog(controllerConnection, { stream: streams.logStream, subjectPrefix: streams.logPrefix, registry, writer }), {
        names: { nodesStream: streams.nodesStream, controlStream: streams.controlStream, prefix: streams.prefix },
        pool,
        statusSchema: `status_${name}`,
        actor: 'controller',
        logger: pino({ level: 'silent' }),
        state: () => controller.mesh(),
      });
      await ingester.start();
      try {
        const facts: string[] = [];
        admin.subscribe(`${name}.seat.mesh-controller.event.>`, { callback: (_e, m) => void facts.push(m.subject) });
        const { jetstreamManager } = await import('@nats-io/jetstream');
        const jsm = await jetstreamManager(admin);
        const message = await waitFor('the declaration', async () => jsm.streams.getMessage(streams.nodesStream, { last_by_subj: `${name}.node.lab1.declare` }).catch(() => null));
        const declaration = declarationSchema.parse(message?.json());
        await jetstream(admin).publish(
          `${name}.control.lab1.report`,
          JSON.stringify(reportFor(declaration)),
        );
        admin.publish(`${name}.control.lab1.alive`);
        await waitFor('the applied fact published', async () => facts.length === 1);
        expect(facts).toEqual([`${name}.seat.mesh-controller.event.applied`]);
        expect(violations).toEqual([]);
      } finally {
        await ingester.stop();
        await controller.stop();
        await pool.end();
      }
    });
  });
});
