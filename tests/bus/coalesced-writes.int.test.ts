import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { connectNats, identityFromEnv } from '../../src/adapters/nats/connect.js';
import { busAuthenticator } from '../../src/adapters/identity.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';

// What one turn of the event loop publishes leaves in one socket write (coalesced-writes.ts),
// counted by the kernel: the write syscalls this process made (/proc/self/io).

const writeSyscalls = (): number => Number(/^syscw:\s+(\d+)/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1]);

/** `count` publishes, each from a microtask of its own, in one turn: the writes the process made meanwhile. */
const writesFor = async (nc: NatsConnection, subject: string, count: number): Promise<number> => {
  await nc.flush();
  const before = writeSyscalls();
  let chain = Promise.resolve();
  for (let i = 0; i < count; i++) chain = chain.then(() => nc.publish(subject, String(i)));
  await chain;
  await nextTurn();
  await nextTurn();
  return writeSyscalls() - before;
};

const received = (nc: NatsConnection, subject: string, count: number): Promise<string[]> => {
  const sub = nc.subscribe(subject, { max: count });
  return (async () => {
    const got: string[] = [];
    for await (const message of sub) got.push(message.string());
    return got;
  })();
};

describe('a connection writes what one turn published in one write', () => {
  let receiver: NatsConnection;
  beforeAll(async () => {
    receiver = await connectNats(testNatsUrl(), { name: 'test-coalesced-receiver' });
  });
  afterAll(async () => {
    await receiver.close();
  });

  it('300 publishes from 300 microtasks take a few writes, where the client alone takes one each; all arrive in order', async () => {
    const count = 300;
    const expected = Array.from({ length: count }, (_, i) => String(i));

    const coalesced = await connectNats(testNatsUrl(), { name: 'test-coalesced-sender', persistent: true });
    const coalescedSubject = `${uniqueName('coalesced')}.messages`;
    const coalescedArrived = received(receiver, coalescedSubject, count);
    await receiver.flush();
    const coalescedWrites = await writesFor(coalesced, coalescedSubject, count);
    expect(await coalescedArrived).toEqual(expected);
    await coalesced.close();

    // The same through the client as it comes: the measure can tell the two apart.
    const identity = identityFromEnv();
    const plain = await connect({ servers: testNatsUrl(), ...(identity ? { authenticator: busAuthenticator(identity.key), inboxPrefix: identity.inbox } : {}) });
    const plainSubject = `${uniqueName('plain')}.messages`;
    const plainArrived = received(receiver, plainSubject, count);
    await receiver.flush();
    const plainWrites = await writesFor(plain, plainSubject, count);
    expect(await plainArrived).toEqual(expected);
    await plain.close();

    process.stdout.write(`socket writes for ${count} publishes in one turn: coalesced ${coalescedWrites}, the client alone ${plainWrites}\n`);
    expect(coalescedWrites).toBeLessThanOrEqual(5);
    expect(plainWrites).toBeGreaterThanOrEqual(count / 2);
  });

  it('a message published just before a close is written, not left behind', async () => {
    const sender = await connectNats(testNatsUrl(), { name: 'test-coalesced-close', persistent: true });
    const subject = `${uniqueName('closing')}.messages`;
    const arrived = received(receiver, subject, 1);
    await receiver.flush();
    sender.publish(subject, 'last words');
    await sender.close();
    expect(await arrived).toEqual(['last words']);
  });
});
