import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { pino } from 'pino';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { WriterLease } from '../../src/adapters/nats/writer-lease.js';
import { sleep } from '../helpers/faults.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { waitFor } from '../helpers/test-mesh.js';

// The writer counts its lease from when it sent the renewal, not from the answer: a renewal whose
// answer comes later than the lease lasts leaves the writer knowing it no longer holds the lease
// (another may have taken it meanwhile), instead of believing it holds it for another lease's time.

const TTL_MS = 1_000;

describe('the writer lease counted from the renewal sent', () => {
  let nc: NatsConnection;
  const stream = `LEASE_${uniqueName('l')}`;
  beforeAll(async () => {
    nc = await connectNats(testNatsUrl(), { name: 'lease-clock' });
  });
  afterAll(async () => {
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
    await nc.close();
  });

  it('does not hold a lease whose renewal was answered after the lease ran out', async () => {
    const js = jetstream(nc);
    let slow = false;
    const answered: { at: number; heldThen: boolean }[] = [];
    const holder: { lease?: WriterLease } = {};
    const publish: JetStreamClient['publish'] = async (...args) => {
      const ack = await js.publish(...args);
      if (!slow) return ack;
      // Stored at once, answered only after the whole lease's time.
      await sleep(TTL_MS + 200);
      // Looked at once the lease has taken the answer in (after its continuation, not before).
      setTimeout(() => answered.push({ at: Date.now(), heldThen: holder.lease?.held() ?? false }), 0);
      return ack;
    };
    let lost: string | undefined;
    const lease = (holder.lease = new WriterLease(nc, { stream, subject: `${stream.toLowerCase()}.writer`, holder: 'clock', ttlMs: TTL_MS, renewMs: Math.floor(TTL_MS / 3), logger: pino({ level: 'silent' }), publish }));
    let taken = false;
    await lease.start({ onTaken: () => void (taken = true), onLost: (why) => void (lost = why) });
    expect(taken).toBe(true);
    expect(lease.held()).toBe(true);

    slow = true;
    await waitFor('a slow renewal answered', async () => (answered.length > 0 ? true : undefined), 10_000);
    await lease.stop();
    // The renewal was stored, so the lease is the writer's again — but not for a lease's time from the answer.
    expect(answered[0]).toMatchObject({ heldThen: false });
    expect(lost).toBeUndefined();
  });

  it('keeps the lease when a renewal was stored but its answer was lost, and still loses it to another', async () => {
    const js = jetstream(nc);
    const settings = { stream: `${stream}_T`, subject: `${stream.toLowerCase()}.timeouts`, ttlMs: 3_000, renewMs: 1_000, logger: pino({ level: 'silent' }) };
    let lostAnswers = 0;
    const stored: number[] = [];
    // Stored by the server, its answer lost (a machine too busy to read it in time): twice, the take's and a renewal's.
    const publish: JetStreamClient['publish'] = async (...args) => {
      const ack = await js.publish(...args);
      stored.push(ack.seq);
      if (lostAnswers > 0) {
        lostAnswers -= 1;
        throw new Error('TIMEOUT');
      }
      return ack;
    };
    const lease = new WriterLease(nc, { ...settings, holder: 'busy', publish });
    let taken = 0;
    let lost: string | undefined;
    lostAnswers = 1;
    await lease.start({ onTaken: () => void (taken += 1), onLost: (why) => void (lost = why) });
    // The take's answer was lost: this process stands by for one tick, then finds the take its own —
    // at its next tick, well before the take would have expired and been free to take again.
    await waitFor('the take found stored', async () => (taken > 0 ? true : undefined), settings.ttlMs - settings.renewMs);
    expect(lease.held()).toBe(true);
    lostAnswers = 1;
    const before = stored.length;
    await waitFor('three renewals after the lost answer', async () => (stored.length >= before + 3 ? true : undefined), 10_000);
    expect(lost).toBeUndefined();
    expect(lease.held()).toBe(true);
    expect(taken).toBe(1);

    // Stopped after a renewal whose answer was lost, the release follows it: another takes the lease at once.
    lostAnswers = 1;
    const beforeStop = stored.length;
    await waitFor('one more renewal, its answer lost', async () => (stored.length > beforeStop ? true : undefined), 5_000);
    await lease.stop();
    const next = new WriterLease(nc, { ...settings, holder: 'next' });
    let nextTaken = false;
    await next.start({ onTaken: () => void (nextTaken = true), onLost: () => undefined });
    expect(nextTaken).toBe(true);
    await next.stop();

    // A renewal refused because another controller's is last is still a lost lease.
    const again = new WriterLease(nc, { ...settings, holder: 'busy', publish });
    await again.start({ onTaken: () => undefined, onLost: (why) => void (lost = why) });
    expect(again.held()).toBe(true);
    await js.publish(settings.subject, JSON.stringify({ holder: 'other', instance: 'another process' }), { expect: { lastSequence: stored[stored.length - 1] } });
    await waitFor('the lease lost to another', async () => lost, 5_000);
    expect(lost).toBe('another controller holds the writer lease now');
    await again.stop();
    await (await jetstreamManager(nc)).streams.delete(settings.stream).catch(() => undefined);
  });

  it('gives the lease back and says why when becoming the writer fails, so another can take it', async () => {
    const subject = `${stream.toLowerCase()}.failing`;
    const other = `${stream}_F`;
    const settings = { stream: other, subject, ttlMs: TTL_MS, renewMs: Math.floor(TTL_MS / 3), logger: pino({ level: 'silent' }) };
    const failing = new WriterLease(nc, { ...settings, holder: 'failing' });
    let lost: string | undefined;
    await failing.start({ onTaken: () => Promise.reject(new Error('PostgreSQL is away')), onLost: (why) => void (lost = why) });
    expect(lost).toMatch(/becoming the writer failed \(PostgreSQL is away\); the lease is given back/);
    expect(failing.held()).toBe(false);
    // Given back, not left to expire: the next controller takes it at its first try.
    const next = new WriterLease(nc, { ...settings, holder: 'next' });
    let taken = false;
    await next.start({ onTaken: () => void (taken = true), onLost: () => undefined });
    expect(taken).toBe(true);
    await next.stop();
    await (await jetstreamManager(nc)).streams.delete(other).catch(() => undefined);
  });
});

