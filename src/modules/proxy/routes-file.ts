import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { RoutesFile } from '../../domain/routes/table.js';

// The routes file as the proxy reads it (ADR 0108, R108.6: the contract is the file). The mesh
// writes it on the proxy's node, beside the module's bus identity (`<root>/.mesh/<proxy>/`), so
// the proxy finds it from `${bus.credential}` alone, as the PostgreSQL provider finds its
// consumers' secrets beside its own. Read at the boundary with zod, once per change of the file.

const target = z.strictObject({ address: z.string().min(1), port: z.number().int().min(1).max(65535) });

const entrySchema = z.strictObject({
  host: z.string().min(1),
  path: z.string().startsWith('/'),
  priority: z.number().int(),
  action: z.enum(['forward', 'refuse', 'redirect']),
  target: target.nullable(),
  redirect: z.strictObject({ to: z.string().min(1), status: z.number().int() }).nullable(),
  auth: z.strictObject({ secret: z.string().min(1), file: z.string().min(1) }).nullable(),
  route: z.string(),
  reason: z.string().nullable(),
});

const askSchema = z.strictObject({ node: z.string().min(1), module: z.string().min(1), route: z.string().min(1), name: z.string().min(1), publicName: z.string().min(1) });

export const routesFileSchema = z.strictObject({ version: z.literal(1), entries: z.array(entrySchema), asked: z.array(askSchema) });

/** `<root>/.mesh/<proxy>/routes/routes.json`, beside `<root>/.mesh/<proxy>/bus-identity.json` (routesFilePath). */
export const routesFileBeside = (busIdentityFile: string): string => join(dirname(busIdentityFile), 'routes', 'routes.json');

export type RoutesRead = { ok: true; file: RoutesFile; text: string } | { ok: false; why: string };

/** The file as it is now: parsed, or why not (not there yet, not JSON, not the contract). */
export const readRoutesFile = (path: string): RoutesRead => {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return { ok: false, why: (error as NodeJS.ErrnoException).code === 'ENOENT' ? `${path} is not there yet` : `${path} cannot be read: ${(error as Error).message}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, why: `${path} is not JSON: ${(error as Error).message}` };
  }
  const parsed = routesFileSchema.safeParse(json);
  if (!parsed.success) return { ok: false, why: `${path} is not a routes file: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
  return { ok: true, file: parsed.data, text };
};
