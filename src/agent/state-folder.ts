import { isDeepStrictEqual } from 'node:util';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive } from '../dev/processes.js';
import { RefusedError } from '../errors.js';
import { declarationSchema, type Declaration } from '../domain/declarations/declaration.js';
import { writeFileAtomic } from './atomic-write.js';
import type { ResourceRecord } from './records.js';

// The agent's folder on the machine: the declaration it accepted last, the records of what it
// applied, process output, and originals of files it found and overwrote. Everything is written
// whole and renamed into place, so a killed agent leaves either the old state or the new.

export class StateFolder {
  private locked = false;

  constructor(readonly dir: string) {}

  get logsDir(): string {
    return join(this.dir, 'logs');
  }

  get foundDir(): string {
    return join(this.dir, 'found');
  }

  /** One agent per folder: two would each think they started what the other did. */
  lock(): void {
    // Only the agent's own folders are closed: a mode on `recursive` would close every folder above
    // them it creates too, and other users (the database server's) may need to pass through those.
    mkdirSync(this.dir, { recursive: true });
    for (const folder of [this.logsDir, this.foundDir]) {
      mkdirSync(folder, { recursive: true });
      chmodSync(folder, 0o700);
    }
    const pidFile = join(this.dir, 'agent.pid');
    const holder = existsSync(pidFile) ? Number.parseInt(readFileSync(pidFile, 'utf8'), 10) : NaN;
    const heldHere = holders.has(this.dir);
    if (heldHere || (Number.isInteger(holder) && holder !== process.pid && isAlive(holder))) {
      throw new RefusedError(`another agent (pid ${heldHere ? process.pid : holder}) uses the state folder ${this.dir}`, { stateDir: this.dir });
    }
    writeFileAtomic(pidFile, `${process.pid}\n`);
    holders.add(this.dir);
    this.locked = true;
  }

  unlock(): void {
    if (!this.locked) return;
    this.locked = false;
    holders.delete(this.dir);
    rmSync(join(this.dir, 'agent.pid'), { force: true });
  }

  /** The newest declaration accepted, or undefined when none ever was (nothing is declared yet). */
  loadDeclaration(): Declaration | undefined {
    const file = join(this.dir, 'declaration.json');
    if (!existsSync(file)) return undefined;
    return declarationSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  }

  saveDeclaration(declaration: Declaration): void {
    writeFileAtomic(join(this.dir, 'declaration.json'), `${JSON.stringify(declaration, null, 2)}\n`, 0o600);
  }

  loadRecords(): ResourceRecord[] {
    const file = join(this.dir, 'records.json');
    if (!existsSync(file)) return [];
    return JSON.parse(readFileSync(file, 'utf8')) as ResourceRecord[];
  }

  saveRecords(records: readonly ResourceRecord[]): void {
    writeFileAtomic(join(this.dir, 'records.json'), `${JSON.stringify(records, null, 2)}\n`, 0o600);
  }

  logFile(recordId: string): string {
    return join(this.logsDir, `${recordId}.log`);
  }

  foundCopy(recordId: string): string {
    return join(this.foundDir, recordId);
  }
}

/** State folders held by agents in this process (a pid file cannot tell two of them apart). */
const holders = new Set<string>();

/**
 * The records, persisted on every change. Writes are synchronous so that two drivers changing
 * records at once never interleave a file. A record put as it already is writes nothing: a pass
 * that finds everything as declared leaves the state folder as it was.
 */
export class RecordStore {
  private readonly records = new Map<string, ResourceRecord>();

  constructor(private readonly folder: StateFolder) {
    for (const record of folder.loadRecords()) this.records.set(record.id, record);
  }

  all(): ResourceRecord[] {
    return [...this.records.values()];
  }

  get(id: string): ResourceRecord | undefined {
    return this.records.get(id);
  }

  put(record: ResourceRecord): void {
    if (isDeepStrictEqual(this.records.get(record.id), record)) return;
    this.records.set(record.id, record);
    this.folder.saveRecords(this.all());
  }

  delete(id: string): void {
    if (this.records.delete(id)) this.folder.saveRecords(this.all());
  }
}
