import { register } from 'tsx/esm/api';

register();

export default async function globalTeardown() {
  if (process.env.MESH_TEST_KEEP_STACK === '1') return;
  const { stackDown } = await import('../../src/dev/stack.ts');
  const { testStack } = await import('./test-stack.ts');
  await stackDown(testStack());
}
