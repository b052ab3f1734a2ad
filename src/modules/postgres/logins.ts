import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { writeFileIfChanged } from '../../agent/atomic-write.js';
import { credentialTag, inForcePath, tagLines } from '../../domain/secrets/credential-tag.js';
import { databaseOf, GROUP_COMMENT, groupRoleOf, LOGIN_COMMENT, loginOf, slotOfFile, type CredentialSlot } from './names.js';
import { scramVerifier, verifies } from './scram.js';

// The provider's ensure step: for every consumer whose secret the mesh delivered to this node (a
// file per credential in the consumers folder), its database, the group role that owns it, and a
// login per credential with that credential's password — and no login of a credential that is no
// longer delivered. Level-based: it compares the server with the folder and changes only what
// differs, so a pass that finds all as it should be changes nothing. It never drops a database or
// a group role: a retired credential, or a consumer gone, leaves its data where it was (ADR 0114).
// What it holds in force it says beside the credentials (`<consumer>.in-force`), which the agent
// waits for before it calls the provider's copy applied: a rotation hands readers the new value
// only once its login authenticates.

export interface Credential {
  slot: CredentialSlot;
  login: string;
  password: string;
}

export interface ConsumerCredentials {
  consumer: string;
  database: string;
  group: string;
  credentials: Credential[];
}

/** What the consumers folder holds: one entry per consumer, each with the credentials delivered for it. */
export const readConsumerCredentials = (folder: string): ConsumerCredentials[] => {
  let files: string[];
  try {
    files = readdirSync(folder);
  } catch {
    return [];
  }
  const byConsumer = new Map<string, ConsumerCredentials>();
  for (const file of files.sort()) {
    const named = slotOfFile(file);
    if (!named) continue;
    const password = readFileSync(join(folder, file), 'utf8').trim();
    if (!password) continue;
    const entry = byConsumer.get(named.consumer) ?? { consumer: named.consumer, database: databaseOf(named.consumer), group: groupRoleOf(named.consumer), credentials: [] };
    entry.credentials.push({ slot: named.slot, login: loginOf(named.consumer, password), password });
    byConsumer.set(named.consumer, entry);
  }
  return [...byConsumer.values()];
};

export interface Admin {
  /** a connection as the superuser to `database` (the maintenance database when none is named) */
  connect(database?: string): Promise<pg.Client>;
}

export const superuserAdmin = (options: { host: string; port: number; password: string }): Admin => ({
  connect: async (database = 'postgres') => {
    const client = new pg.Client({ host: options.host, port: options.port, user: 'postgres', password: options.password, database, connectionTimeoutMillis: 5_000 });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  },
});

/** What a pass changed, each a sentence naming the consumer. */
export type Changes = string[];

export interface Ensured {
  changes: Changes;
  /** by consumer: the tags of the credentials whose logins authenticate with them now */
  inForce: Map<string, string[]>;
}

interface RoleRow {
  rolname: string;
  rolcanlogin: boolean;
  rolpassword: string | null;
  comment: string | null;
}

const rolesOf = async (client: pg.Client): Promise<Map<string, RoleRow>> => {
  const { rows } = await client.query<RoleRow>(`SELECT rolname, rolcanlogin, rolpassword, shobj_description(oid, 'pg_authid') AS comment FROM pg_authid`);
  return new Map(rows.map((r) => [r.rolname, r]));
};

export const ensureConsumerLogins = async (admin: Admin, wanted: readonly ConsumerCredentials[]): Promise<Ensured> => {
  const changes: Changes = [];
  const inForce = new Map<string, string[]>();
  const client = await admin.connect();
  try {
    const id = (name: string) => client.escapeIdentifier(name);
    const literal = (text: string) => client.escapeLiteral(text);
    let roles = await rolesOf(client);
    const { rows: databases } = await client.query<{ datname: string }>('SELECT datname FROM pg_database');
    const hasDatabase = new Set(databases.map((d) => d.datname));
    const wantedLogins = new Set<string>();

    for (const consumer of wanted) {
      const group = roles.get(consumer.group);
      if (group && group.comment !== `${GROUP_COMMENT}${consumer.consumer}`) {
        changes.push(`refused ${consumer.consumer}: role ${consumer.group} exists and is not the mesh's (left alone)`);
        continue;
      }
      if (!group) {
        await client.query(`CREATE ROLE ${id(consumer.group)} NOLOGIN`);
        await client.query(`COMMENT ON ROLE ${id(consumer.group)} IS ${literal(`${GROUP_COMMENT}${consumer.consumer}`)}`);
        changes.push(`made role ${consumer.group}, which owns the data of ${consumer.consumer}`);
      }
      if (!hasDatabase.has(consumer.database)) {
        await client.query(`CREATE DATABASE ${id(consumer.database)} OWNER ${id(consumer.group)}`);
        await client.query(`REVOKE ALL ON DATABASE ${id(consumer.database)} FROM PUBLIC`);
        changes.push(`made database ${consumer.database} for ${consumer.consumer}`);
      }
      for (const credential of consumer.credentials) {
        wantedLogins.add(credential.login);
        const login = roles.get(credential.login);
        const comment = `${LOGIN_COMMENT}${consumer.consumer}`;
        if (login && login.comment !== comment) {
          changes.push(`refused the ${credential.slot} login of ${consumer.consumer}: role ${credential.login} exists and is not the mesh's (left alone)`);
          continue;
        }
        if (!login) {
          // Acts as the group: what it creates belongs to the group, and stays when the login goes.
          await client.query(`CREATE ROLE ${id(credential.login)} LOGIN PASSWORD ${literal(scramVerifier(credential.password))} IN ROLE ${id(consumer.group)}`);
          await client.query(`ALTER ROLE ${id(credential.login)} SET role = ${literal(consumer.group)}`);
          await client.query(`COMMENT ON ROLE ${id(credential.login)} IS ${literal(comment)}`);
          changes.push(`made login ${credential.login} (the ${credential.slot} credential of ${consumer.consumer})`);
        } else if (!login.rolcanlogin || !verifies(credential.password, login.rolpassword)) {
          await client.query(`ALTER ROLE ${id(credential.login)} LOGIN PASSWORD ${literal(scramVerifier(credential.password))}`);
          changes.push(`gave login ${credential.login} the ${credential.slot} credential of ${consumer.consumer}`);
        }
        inForce.set(consumer.consumer, [...(inForce.get(consumer.consumer) ?? []), credentialTag(credential.password)]);
      }
    }

    // A login of the mesh's whose credential is no longer delivered: what it owns goes to its
    // consumer's group first, then the login goes. Its data stays.
    roles = await rolesOf(client);
    for (const role of roles.values()) {
      if (!role.comment?.startsWith(LOGIN_COMMENT) || wantedLogins.has(role.rolname)) continue;
      const consumer = role.comment.slice(LOGIN_COMMENT.length);
      await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role.rolname]);
      if (hasDatabase.has(databaseOf(consumer))) {
        const inDatabase = await admin.connect(databaseOf(consumer));
        try {
          await inDatabase.query(`REASSIGN OWNED BY ${id(role.rolname)} TO ${id(groupRoleOf(consumer))}`);
          await inDatabase.query(`DROP OWNED BY ${id(role.rolname)}`);
        } finally {
          await inDatabase.end();
        }
      }
      await client.query(`DROP ROLE ${id(role.rolname)}`);
      changes.push(`dropped login ${role.rolname} of ${consumer}: its credential is no longer delivered (its data stays with ${groupRoleOf(consumer)})`);
    }
    return { changes, inForce };
  } finally {
    await client.end();
  }
};

/**
 * Says beside each consumer's credentials which of them are in force, and takes the word back for
 * a consumer no longer delivered. Written only when it changes.
 */
export const writeInForce = (folder: string, wanted: readonly ConsumerCredentials[], inForce: ReadonlyMap<string, string[]>): void => {
  for (const consumer of wanted) writeFileIfChanged(inForcePath(join(folder, consumer.consumer)), tagLines(inForce.get(consumer.consumer) ?? []), 0o600);
  const delivered = new Set(wanted.map((consumer) => consumer.consumer));
  let files: string[];
  try {
    files = readdirSync(folder);
  } catch {
    return;
  }
  for (const file of files) {
    const consumer = /^(.+)\.in-force$/.exec(file)?.[1];
    if (consumer && !delivered.has(consumer)) rmSync(join(folder, file), { force: true });
  }
};
