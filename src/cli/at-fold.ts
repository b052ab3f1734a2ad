import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import pino from 'pino';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import { foldCodeVersion } from '../adapters/fold-version.js';
import { FoldSnapshotStore } from '../adapters/nats/fold-snapshot-store.js';
import { loadConfig } from '../config.js';
import { FoldSnapshots } from '../controller/fold-snapshots.js';
import { emptyMeshState, evolveMesh } from '../domain/mesh/state.js';
import { meshEventRegistry } from '../domain/registry.js';
import { ValidationError } from '../errors.js';
import type { AtFlag, MeshAt } from './at.js';
import { connectAsOperator } from './bus-connection.js';
import { say } from './output.js';

// `--at SEQ|TIME`'s fold (at.ts says what it answers): from the controller's snapshot of its fold
// when one was taken at or before the sequence, else from seq 1. Loaded only by a read given --at.

/** The time a commit was recorded: its first event's, as `mesh log` prints it (the server's when it does not read). */
const commitTime = async (jsm: JetStreamManager, stream: string, seq: number): Promise<Date> => {
  const message = await jsm.streams.getMessage(stream, { seq });
  if (!message) throw new ValidationError(`--at: the log holds no commit at seq ${seq}`, { field: '--at', seq });
  try {
    const commit = message.json<{ events?: { time?: string }[] }>();
    const time = commit.events?.[0]?.time;
    if (time) return new Date(time);
  } catch {
    // a commit that does not read: the server's time stands in
  }
  return message.time;
};

/** The last sequence whose commit was recorded at or before `time`, by bisection over the log (times grow with the sequence). */
const sequenceAt = async (jsm: JetStreamManager, stream: string, first: number, head: number, at: { time: Date; written: string }): Promise<number> => {
  const firstTime = await commitTime(jsm, stream, first);
  if (at.time < firstTime) throw new ValidationError(`--at ${at.written} is before the log's first commit (seq ${first}, ${firstTime.toISOString()}): the mesh did not exist yet`, { field: '--at', value: at.written });
  let low = first;
  let high = head;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if ((await commitTime(jsm, stream, mid)) <= at.time) low = mid;
    else high = mid - 1;
  }
  return low;
};

/** Folds the log up to the sequence `at` names and hands the mesh as it was then to `work`. */
export const foldMeshAt = async <T>(at: AtFlag, work: (mesh: MeshAt) => Promise<T>): Promise<T> => {
  const config = loadConfig();
  const nc = await connectAsOperator(config, 'mesh-cli-at');
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    const jsm = await jetstreamManager(nc);
    await verifyLogStream(jsm, settings, config.natsUrl);
    const { first_seq: first, last_seq: head } = (await jsm.streams.info(config.logStream)).state;
    if (head === 0) throw new ValidationError('--at: the log holds no commit yet', { field: '--at' });
    let seq: number;
    if ('seq' in at) {
      if (at.seq > head) throw new ValidationError(`--at ${at.seq} is beyond the log's head (seq ${head}): the mesh has not been there yet`, { field: '--at', value: at.seq, head });
      seq = at.seq;
    } else seq = await sequenceAt(jsm, config.logStream, first, head, at);

    const log = new JetStreamEventLog(nc, { ...settings, registry: meshEventRegistry() });
    const snapshots = new FoldSnapshots({
      store: new FoldSnapshotStore(nc, { logStream: config.logStream, fold: 'mesh' }),
      log,
      stream: config.logStream,
      codeVersion: foldCodeVersion(),
      logger: pino({ level: 'silent' }),
    });
    const loaded = await snapshots.load();
    let state = emptyMeshState();
    let from: string;
    if ('state' in loaded && loaded.state.seq <= seq) {
      state = loaded.state;
      from = `from the snapshot at seq ${loaded.state.seq}`;
    } else from = `from seq 1 (${'state' in loaded ? `the snapshot was taken at seq ${loaded.state.seq}, after it` : (loaded.start.reason ?? 'no snapshot')})`;
    if (state.seq < seq) {
      for await (const event of log.read({ fromSeq: state.seq + 1, onPassed: (passed) => say(`commit ${passed.seq} was voided (${passed.reason}): passed by`) })) {
        if (event.seq > seq) break;
        evolveMesh(state, event);
      }
    }
    return await work({ state, seq, time: (await commitTime(jsm, config.logStream, seq)).toISOString(), from });
  } finally {
    await nc.close();
  }
};

