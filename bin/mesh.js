#!/usr/bin/env node
// The `mesh` command: runs the TypeScript CLI through tsx's loader, so a checkout works after
// `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
