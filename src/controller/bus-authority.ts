import { existsSync, readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { z } from 'zod';
import { foldSnapshotWriterIdentity, moduleBusIdentity, type Identity } from '../adapters/identity.js';
import { writeBusUsers, type BusUsersFileOptions } from '../adapters/nats/bus-users-file.js';
import { composeBusUsers, nextTokenExpiry, type BusUser, type BusWire } from '../domain/bus/users.js';
import type { MeshState } from '../domain/mesh/state.js';
import { ValidationError } from '../errors.js';

// The control plane's authority over the bus: after a change of the mesh that can change who may
// speak or what (BUS_USER_EVENT_TYPES) it composes the user list again and, when it differs, writes it and has the server reload it — before the
// declarations that change is about are published, so a module is granted its subjects before it
// is told to start. A token's expiry changes the list by itself, so one is waited for too.

export interface BusAuthorityOptions {
  file: BusUsersFileOptions;
  wire: BusWire;
  controller: Identity;
  statics?: readonly BusUser[];
  logger: Logger;
  now?: () => Date;
}

export class BusAuthority {
  private state: MeshState | undefined;
  private queue: Promise<void> = Promise.resolve();
  private expiryTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: BusAuthorityOptions) {}

  /** The list for this state; the file and the server follow. Calls are taken one at a time. */
  /** Resolves false when the list could not be written (the server keeps the previous one): the caller syncs again later. */
  sync(state: MeshState): Promise<boolean> {
    this.state = state;
    const written = this.queue
      .then(() => this.write(state))
      .then(
        () => true,
        (error: unknown) => {
          this.options.logger.error({ err: error }, 'the bus user list could not be written; the server keeps the previous one');
          return false;
        },
      );
    this.queue = written.then(() => undefined);
    return written;
  }

  /** The users as composed now, for `mesh bus users` and the tests. */
  compose(state: MeshState): BusUser[] {
    const { controller, wire } = this.options;
    return composeBusUsers(state, {
      wire,
      controllerKey: controller.publicKey,
      snapshotWriterKey: foldSnapshotWriterIdentity(controller).publicKey,
      moduleKey: (node, module) => moduleBusIdentity(controller, node, module).publicKey,
      now: this.now(),
      statics: this.options.statics ?? [],
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  private async write(state: MeshState): Promise<void> {
    if (this.stopped) return;
    const users = this.compose(state);
    const outcome = await writeBusUsers(this.options.file, users);
    if (outcome.changed) {
      const counts = Object.entries(users.reduce<Record<string, number>>((all, user) => ({ ...all, [user.kind]: (all[user.kind] ?? 0) + 1 }), {}))
        .map(([kind, n]) => `${n} ${kind}`)
        .join(', ');
      if (outcome.reloaded) this.options.logger.info({ users: users.length, file: this.options.file.file, seq: state.seq }, `bus users composed and reloaded: ${counts}`);
      else this.options.logger.warn({ users: users.length, file: this.options.file.file, why: outcome.why }, 'bus users written, but the server was not seen to reload them');
    }
    this.armExpiry(state);
  }

  private armExpiry(state: MeshState): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    const next = nextTokenExpiry(state, this.now());
    if (!next || this.stopped) return;
    // setTimeout holds at most ~24.8 days; a later expiry is looked at again then.
    const delay = Math.min(Math.max(0, next.getTime() - this.now().getTime()) + 50, 2 ** 31 - 1);
    this.expiryTimer = setTimeout(() => {
      if (this.state) void this.sync(this.state);
    }, delay);
    this.expiryTimer.unref();
  }
}

const staticUserSchema = z.strictObject({
  kind: z.literal('static'),
  name: z.string().min(1),
  publicKey: z.string().regex(/^[A-Za-z0-9+/]{43}=$/),
  inbox: z.string().min(1),
  permissions: z.strictObject({
    publish: z.strictObject({ allow: z.array(z.string().min(1)), deny: z.array(z.string().min(1)).optional() }),
    subscribe: z.strictObject({ allow: z.array(z.string().min(1)) }),
    allowResponses: z.boolean(),
  }),
});

/** Principals the server's administrator lists by hand (MESH_BUS_STATIC_USERS): a JSON array, checked. */
export const loadStaticBusUsers = (file: string | undefined): BusUser[] => {
  if (!file) return [];
  if (!existsSync(file)) throw new ValidationError(`MESH_BUS_STATIC_USERS names ${file}, which does not exist`, { field: 'MESH_BUS_STATIC_USERS' });
  const parsed = z.array(staticUserSchema).safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ValidationError(`${file}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`, { field: 'MESH_BUS_STATIC_USERS' });
  }
  return parsed.data;
};

/**
 * Where the controller writes the list and how it tells the server: MESH_BUS_USERS_FILE and friends;
 * undefined when unset. MESH_BUS_SYSTEM_KEY names the bus's system user key, with which each
 * server's reload is confirmed at its address in `natsUrl` (MESH_NATS_URL, a cluster's in the
 * order of MESH_BUS_SERVER_PID_FILE).
 */
export const busUsersFileFromEnv = (natsUrl: string, env: NodeJS.ProcessEnv = process.env): BusUsersFileOptions | undefined => {
  if (!env.MESH_BUS_USERS_FILE) return undefined;
  return {
    file: env.MESH_BUS_USERS_FILE,
    ...(env.MESH_BUS_SERVER_PID_FILE ? { serverPidFile: env.MESH_BUS_SERVER_PID_FILE } : {}),
    ...(env.MESH_BUS_SYSTEM_KEY ? { system: { urls: natsUrl, keyFile: env.MESH_BUS_SYSTEM_KEY } } : {}),
  };
};
