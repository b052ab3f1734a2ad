import { StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { foldSnapshotBucket } from '../../domain/bus/subjects.js';

// The snapshots of a fold, on the engine that holds the log: a JetStream object store bucket named
// after the log's stream (foldSnapshotBucket), one object per fold, replaced by each new snapshot
// (the object store purges the chunks of the one before). What a snapshot says of itself — its
// sequence, the commit it was taken at, its code version, its signature — is the object's
// metadata, readable without fetching the state. Judging it is the caller's (fold-snapshots.ts).

export interface StoredSnapshot {
  /** the object's metadata, as written */
  meta: Readonly<Record<string, string>>;
  /** the state's bytes, fetched when asked (null: the object went away meanwhile) */
  bytes(): Promise<Uint8Array | null>;
}

export interface FoldSnapshotStoreOptions {
  /** the log's stream: the bucket is named after it */
  logStream: string;
  /** the fold's name: one object per fold */
  fold: string;
  /**
   * The connection that writes (the snapshot writer's identity, which may purge the bucket's old
   * chunks); the reading connection when absent. Asked for at the first write.
   */
  writer?: () => Promise<NatsConnection>;
  /** copies the bus keeps of the bucket (streamReplicas): 1 when absent */
  replicas?: number;
}

const notFound = (error: unknown): boolean => /not found|stream not found|no stream/i.test((error as Error)?.message ?? '');

export class FoldSnapshotStore {
  readonly bucket: string;
  private writing: Promise<ObjectStore> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: FoldSnapshotStoreOptions,
  ) {
    this.bucket = foldSnapshotBucket(options.logStream);
  }

  /** Where the snapshot lives, for people: `mesh-fold-snapshots/mesh-view`. */
  get where(): string {
    return `${this.bucket}/${this.options.fold}`;
  }

  /** The snapshot stored for this fold, or undefined when there is none (nor any bucket yet). */
  async read(): Promise<StoredSnapshot | undefined> {
    let store: ObjectStore;
    try {
      store = await new Objm(this.nc).open(this.bucket);
    } catch (error) {
      if (notFound(error)) return undefined;
      throw error;
    }
    const info = await store.info(this.options.fold);
    if (!info || info.deleted) return undefined;
    return { meta: info.metadata ?? {}, bytes: () => store.getBlob(this.options.fold) };
  }

  /** Replaces the fold's snapshot. */
  async write(meta: Record<string, string>, bytes: Uint8Array, description: string): Promise<void> {
    const store = await this.writable();
    await store.putBlob({ name: this.options.fold, description, metadata: meta }, bytes);
  }

  private writable(): Promise<ObjectStore> {
    const opening = (this.writing ??= (async () => {
      const nc = this.options.writer ? await this.options.writer() : this.nc;
      return new Objm(nc).create(this.bucket, { storage: StorageType.File, replicas: this.options.replicas ?? 1, description: `snapshots of the folds of ${this.options.logStream}, one per fold` });
    })());
    // A failed opening (the writer's user not composed yet, the server away) is tried again at the next write.
    opening.catch(() => {
      if (this.writing === opening) this.writing = undefined;
    });
    return opening;
  }
}
