import { jetstreamManager } from '@nats-io/jetstream';
import { loadConfig } from '../config.js';
import { connectAsOperator } from './bus-connection.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import { verifyLog } from '../audit/verify-log.js';
import { meshEventRegistry } from '../domain/registry.js';
import { ValidationError } from '../errors.js';
import { parseFlags } from './flags.js';
import { output } from './output.js';

// `mesh audit verify`: the whole log re-checked from its first sequence — every envelope decoded
// as readers decode it, every stored operator signature against the key the log held then.
// Exits 1 when anything fails, naming each failure's sequence.

export const auditCommand = async (args: string[]): Promise<number> => {
  const [sub, ...rest] = args;
  if (sub !== 'verify') throw new ValidationError('usage: mesh audit verify [--json]', { field: 'verb' });
  const { values } = parseFlags(rest, { json: { type: 'boolean', default: false } });
  const out = output(values.json ?? false);
  const config = loadConfig();
  const nc = await connectAsOperator(config, 'mesh-audit');
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    await verifyLogStream(await jetstreamManager(nc), settings, config.natsUrl);
    const report = await verifyLog(nc, { ...settings, registry: meshEventRegistry() });
    if (out.json) out.data({ ok: report.failures.length === 0, ...report });
    else {
      for (const failure of report.failures) out.line(`seq ${failure.seq} ${failure.aggregate}: ${failure.kind}: ${failure.why}`);
      out.line(
        `${report.failures.length === 0 ? 'verified' : `${report.failures.length} failed`}: ${report.commits} commits, ${report.events} events, ${report.signatures} operator signatures, up to seq ${report.head}`,
      );
    }
    return report.failures.length === 0 ? 0 : 1;
  } finally {
    await nc.close();
  }
};
