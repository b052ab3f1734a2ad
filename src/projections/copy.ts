import type { ClientBase, QueryConfig } from 'pg';

// COPY … FROM STDIN through pg's submittable interface: PostgreSQL's bulk-load path, the fastest
// way rows get into a table, usable inside a transaction like any statement. Values go in COPY's
// text format; a failure (a constraint, a bad value) rejects with the server's error and SQLSTATE.

type CopyConnection = { query(text: string): void; sendCopyFromChunk(chunk: Buffer): void; endCopyFrom(): void };

class CopyFromStdin {
  callback?: (error: Error | null) => void;
  private settled = false;

  constructor(
    private readonly statement: string,
    private readonly chunks: readonly Buffer[],
  ) {}

  submit(connection: CopyConnection): void {
    connection.query(this.statement);
  }

  handleCopyInResponse(connection: CopyConnection): void {
    for (const chunk of this.chunks) connection.sendCopyFromChunk(chunk);
    connection.endCopyFrom();
  }

  handleCommandComplete(): void {}

  // Settles on the first of an error (the server's, or the connection's end, after which no
  // ReadyForQuery comes) and ReadyForQuery; the client queues later statements until it is ready.
  handleError(error: Error): void {
    this.settle(error);
  }

  handleReadyForQuery(): void {
    this.settle(null);
  }

  private settle(error: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    this.callback?.(error);
  }
}

/** Runs `COPY <target> FROM STDIN` on `client`, sending `chunks` (lines in COPY text format) as its data. */
export const copyFromStdin = (client: Pick<ClientBase, 'query'>, target: string, chunks: readonly Buffer[]): Promise<void> =>
  new Promise((resolve, reject) => {
    const copy = new CopyFromStdin(`COPY ${target} FROM STDIN`, chunks);
    copy.callback = (error) => (error ? reject(error) : resolve());
    client.query(copy as unknown as QueryConfig);
  });

const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One value in COPY's text format: backslash, tab, newline and carriage return escaped. */
export const copyText = (value: string): string => (SPECIAL.test(value) ? value.replace(SPECIALS, (c) => ESCAPES[c] as string) : value);
