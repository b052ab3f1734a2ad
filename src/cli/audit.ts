import { existsSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { loadConfig } from '../config.js';
import { connectAsOperator } from './bus-connection.js';
import { loadIdentityFile } from '../adapters/identity.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import { verifyLog, type VerifySource } from '../audit/verify-log.js';
import { meshEventRegistry } from '../domain/registry.js';
import { ValidationError } from '../errors.js';
import { output } from './output.js';

// `mesh audit verify [--controller-key KEY|FILE]`: the whole log re-checked from its first
// sequence — every link and writer signature against the key the genesis names (and that key
// against this machine's controller key, when there is one), every envelope decoded as readers
// decode it, every stored operator signature against the key the log held then, and who added
// every operator. Exits 1 when anything fails, naming each failure's sequence and the first.

const ED25519_PUBLIC_KEY = /^[A-Za-z0-9+/]{43}=$/;

/** The controller key to hold the genesis to: the flag (a public key, or a key file), else this machine's key file when there is one. */
const localKey = (flag: string | undefined, keyFile: string): VerifySource['localKey'] => {
  if (flag !== undefined) {
    if (ED25519_PUBLIC_KEY.test(flag)) return { publicKey: flag, from: '--controller-key' };
    if (!existsSync(flag)) throw new ValidationError(`--controller-key "${flag}" is neither an ed25519 public key (base64) nor a key file`, { field: '--controller-key' });
    return { publicKey: loadIdentityFile(flag).publicKey, from: flag };
  }
  return existsSync(keyFile) ? { publicKey: loadIdentityFile(keyFile).publicKey, from: keyFile } : undefined;
};


export const verifyCommand = async (values: { json?: true; controllerKey?: string }): Promise<number> => {
  const out = output(values.json ?? false);
  const config = loadConfig();
  const local = localKey(values.controllerKey, config.controllerKeyFile);
  const nc = await connectAsOperator(config, 'mesh-audit');
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    await verifyLogStream(await jetstreamManager(nc), settings, config.natsUrl);
    const report = await verifyLog(nc, { ...settings, registry: meshEventRegistry(), ...(local ? { localKey: local } : {}) });
    const ok = report.failures.length === 0;
    if (out.json) out.data({ ok, ...report });
    else {
      for (const failure of report.failures) out.line(`seq ${failure.seq} ${failure.aggregate}: ${failure.kind}: ${failure.why}`);
      for (const voided of report.voided) out.line(`seq ${voided.seq} ${voided.aggregate}: voided at seq ${voided.voidSeq} by ${voided.actor} ("${voided.reason}"); readers pass it by: ${voided.problem}`);
      const checked = `${report.commits} commits, ${report.events} events, ${report.signatures} operator signatures, up to seq ${report.head}; writer key ${report.writerKey ?? 'unknown'}${local ? ` (this machine's, ${local.from})` : ''}`;
      out.line(ok ? `verified: ${checked}${report.voided.length > 0 ? `; ${report.voided.length} voided commit(s) passed by` : ''}` : `${report.failures.length} failed, the first at seq ${report.firstFailure}: ${checked}`);
    }
    return ok ? 0 : 1;
  } finally {
    await nc.close();
  }
};
