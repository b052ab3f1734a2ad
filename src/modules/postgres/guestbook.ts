import { readFileSync } from 'node:fs';
import pg from 'pg';
import { ValidationError } from '../../errors.js';

// The consumer's side: a module that logs in with the credential the vault made for it and the
// names its provider answered, as libpq's password file writes them
// (`host:port:database:user:password`, https://www.postgresql.org/docs/15/libpq-pgpass.html),
// then signs a guestbook in its database and reads how many have signed, again and again. It
// exits as soon as a login is refused or the server cannot be reached, so the agent restarts it
// and a login that does not work shows as a crash loop, never as a healthy module.

export interface Login {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
}

/** The first line of a password file, its `\:` and `\\` read back. */
export const readPgpass = (file: string): Login => parsePgpass(readFileSync(file, 'utf8'), file);

/** A password file's text, read as `readPgpass` reads the file (`file` names it in a refusal). */
export const parsePgpass = (text: string, file: string): Login => {
  const line = text.split('\n').find((l) => l.trim() && !l.startsWith('#')) ?? '';
  const fields: string[] = [];
  let field = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '\\' && i + 1 < line.length) field += line[++i];
    else if (c === ':') {
      fields.push(field);
      field = '';
    } else field += c;
  }
  fields.push(field);
  const [host = '', port = '', database = '', user = '', password = ''] = fields;
  if (fields.length !== 5 || !host || !database || !user || !password || !/^\d+$/.test(port)) {
    throw new ValidationError(`${file} is not one line host:port:database:user:password`, { field: '--pgpass' });
  }
  return { host, port: Number(port), database, user, password };
};

/** Signs once: the table first (the group owns it, whichever login makes it), then a row, then the count. */
export const signOnce = async (login: Login, by: string): Promise<number> => {
  const client = new pg.Client({ ...login, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('CREATE TABLE IF NOT EXISTS signatures (id bigserial PRIMARY KEY, signed_at timestamptz NOT NULL DEFAULT now(), signed_by text NOT NULL)');
    await client.query('INSERT INTO signatures (signed_by) VALUES ($1)', [by]);
    const { rows } = await client.query<{ count: string }>('SELECT count(*) AS count FROM signatures');
    return Number(rows[0]?.count ?? 0);
  } finally {
    await client.end();
  }
};
