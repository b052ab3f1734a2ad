import type { Pool, PoolClient } from 'pg';

// A client taken from a pool for several statements (a transaction). While it is out of the pool,
// a connection lost under it (PostgreSQL stopped, a network cut) is an 'error' event on the client
// itself, and an 'error' event nobody listens to ends the process. The failing statement already
// reports it; this listens so the process lives, and hands a lost client back to be thrown away.

export const withPoolClient = async <T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> => {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onLost = (error: Error): void => {
    lost = error;
  };
  client.on('error', onLost);
  try {
    return await work(client);
  } finally {
    client.removeListener('error', onLost);
    client.release(lost);
  }
};

/** `work` in one transaction on a client of its own: committed when it returns, rolled back when it throws. */
export const inTransaction = <T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> =>
  withPoolClient(pool, async (client) => {
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  });
