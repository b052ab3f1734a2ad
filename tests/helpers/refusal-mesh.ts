import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { operatorCli } from './cli.js';
import { testNatsUrl } from './log.js';
import { uniqueName } from './names.js';
import { openTestMesh, type TestMesh } from './test-mesh.js';

/**
 * A test mesh an operator's CLI sends commands to, with operatorCli's refusal check (exit code, no
 * stack trace, the log's head where it was): `open` in a beforeAll, `close` in the afterAll.
 */
export const refusalMesh = (prefix: string) => {
  let opened: TestMesh | undefined;
  let env: Record<string, string> = {};
  const dir = join(meshHome(), 'tmp', uniqueName(prefix));
  const testMesh = (): TestMesh => {
    if (!opened) throw new Error('the mesh is not open yet: call open() in a beforeAll');
    return opened;
  };
  const head = async (): Promise<number> => (await testMesh().jsm.streams.info(testMesh().names.logStream)).state.last_seq;
  return {
    ...operatorCli(() => ({ env, logHead: head }), dir),
    testMesh,
    open: async (): Promise<TestMesh> => {
      mkdirSync(dir, { recursive: true });
      opened = await openTestMesh();
      env = { ...(await opened.operatorCommands()), MESH_NATS_URL: testNatsUrl() };
      return opened;
    },
    close: async (): Promise<void> => {
      await opened?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};
