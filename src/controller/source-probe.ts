import { NoRespondersError, type NatsConnection } from '@nats-io/nats-core';
import { probeSubject } from '../adapters/nats/build-streams.js';
import { probeAnswerSchema, type ProbeOutcome, type ProbeRequest } from '../domain/builds/probe.js';

// The control plane cannot read a repository; a holder of mesh-build-machine can. Before an
// operator's build is submitted it asks one (core request/reply on the seat's probe tool) whether
// the module's folder is at the commit. No holder on the bus is known at once (no responders); one
// that does not answer in time is given up on: either way the build is not refused for it.

/** Inside the CLI's 30-second wait for a command, and longer than a holder's own 15 s bound on the git work. */
export const PROBE_WAIT_MS = 20_000;

export type SourceProbe = (request: ProbeRequest) => Promise<ProbeOutcome>;

export const sourceProbe =
  (nc: NatsConnection, options: { prefix: string; timeoutMs?: number }): SourceProbe =>
  async (request) => {
    const timeoutMs = options.timeoutMs ?? PROBE_WAIT_MS;
    try {
      const reply = await nc.request(probeSubject(options.prefix), JSON.stringify(request), { timeout: timeoutMs });
      const parsed = probeAnswerSchema.safeParse(reply.json());
      return parsed.success ? parsed.data : { found: 'unanswered', why: `a holder answered something that is not a probe's answer (${parsed.error.issues[0]?.message ?? 'unreadable'})` };
    } catch (error) {
      const name = (error as Error).name;
      if (error instanceof NoRespondersError || name === 'NoRespondersError' || /no responders/i.test((error as Error).message)) return { found: 'unanswered', why: 'none is on the bus' };
      if (name === 'TimeoutError' || /timeout/i.test((error as Error).message)) return { found: 'unanswered', why: `none answered within ${timeoutMs / 1000} s` };
      return { found: 'unanswered', why: (error as Error).message };
    }
  };
