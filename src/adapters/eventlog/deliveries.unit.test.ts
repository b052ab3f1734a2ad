import { afterEach, describe, expect, it } from '@jest/globals';
import { ConsumerStalledError, deliveriesOf, type Delivery, type DeliveryPatience } from './deliveries.js';

interface Message {
  seq: number;
  info: { pending: number };
}

const opened: (() => void)[] = [];
afterEach(() => {
  for (const end of opened.splice(0)) end();
});

/** A consumer that delivers `first`, then `later` once `release` is called, then nothing until the test ends. */
const consumerOf = (first: Message[], later: Message[] = []): { messages: AsyncIterable<Message>; release: () => void } => {
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let end: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  opened.push(() => {
    release();
    end();
  });
  async function* messages(): AsyncGenerator<Message> {
    yield* first;
    await Promise.race([released, ended]);
    yield* later;
    await ended;
  }
  return { messages: messages(), release };
};

const take = async (deliveries: AsyncIterator<Delivery<Message>>, count: number): Promise<Delivery<Message>[]> => {
  const taken: Delivery<Message>[] = [];
  while (taken.length < count) {
    const next = await deliveries.next();
    if (next.done) break;
    taken.push(next.value);
  }
  return taken;
};

const message = (seq: number, pending: number): Message => ({ seq, info: { pending } });

/** Waits `quietMs` for what a delivery promised; idle looks and the stall far off unless a test is about them. */
const patience = (quietMs: number, more: Partial<DeliveryPatience> = {}): DeliveryPatience => ({ quietMs, idleMs: 10_000, stalledMs: 60_000, ...more });

describe('deliveries of a consumer whose pending count can be wrong', () => {
  it('passes messages on as they come, with the pending the server gave', async () => {
    const { messages } = consumerOf([message(1, 2), message(2, 1), message(3, 0)]);
    const taken = await take(deliveriesOf(messages, async () => 3, patience(20))[Symbol.asyncIterator](), 3);
    expect(taken).toEqual([
      { kind: 'message', message: message(1, 2), pending: 2 },
      { kind: 'message', message: message(2, 1), pending: 1 },
      { kind: 'message', message: message(3, 0), pending: 0 },
    ]);
  });

  it('lets go on idle when what the server promised never comes, without asking the server', async () => {
    let asks = 0;
    const { messages } = consumerOf([message(38, 1), message(39, 1)]);
    const deliveries = deliveriesOf(messages, async () => {
      asks++;
      return 39;
    }, patience(20))[Symbol.asyncIterator]();
    const taken = await take(deliveries, 3);
    expect(taken.map((d) => (d.kind === 'message' ? d.message.seq : `idle ${d.seq}`))).toEqual([38, 39, 'idle 39']);
    expect(asks).toBe(0);
  });

  it('lets go on idle whatever the count said, even while the server claims to hold more; what comes later still comes', async () => {
    // The count seen after PostgreSQL came back: 2–3 after the last message, for minutes.
    const { messages, release } = consumerOf([message(49, 3), message(50, 2), message(51, 3)], [message(52, 0)]);
    const deliveries = deliveriesOf(messages, async () => 54, patience(20))[Symbol.asyncIterator]();
    const taken = await take(deliveries, 4);
    expect(taken.map((d) => (d.kind === 'message' ? d.message.seq : `idle ${d.seq}`))).toEqual([49, 50, 51, 'idle 51']);
    release();
    expect((await take(deliveries, 1)).map((d) => (d.kind === 'message' ? d.message.seq : `idle ${d.seq}`))).toEqual([52]);
  });

  it('says idle once per promise, not again while nothing comes', async () => {
    const { messages } = consumerOf([message(7, 1)]);
    const deliveries = deliveriesOf(messages, async () => 7, patience(10, { idleMs: 10 }))[Symbol.asyncIterator]();
    expect((await take(deliveries, 2)).map((d) => d.kind)).toEqual(['message', 'idle']);
    const more = await Promise.race([deliveries.next().then(() => 'delivered'), new Promise((resolve) => setTimeout(() => resolve('quiet'), 80))]);
    expect(more).toBe('quiet');
  });

  it('asks the server no sooner than its idle interval after a delivery that said it was the last', async () => {
    let asks = 0;
    const { messages } = consumerOf([message(5, 0)]);
    const deliveries = deliveriesOf(messages, async () => {
      asks++;
      return 5;
    }, patience(5))[Symbol.asyncIterator]();
    expect((await take(deliveries, 1)).length).toBe(1);
    const more = await Promise.race([deliveries.next().then(() => 'delivered'), new Promise((resolve) => setTimeout(() => resolve('quiet'), 60))]);
    expect(more).toBe('quiet');
    expect(asks).toBe(0);
  });

  it('starts again when the consumer delivers nothing while the server holds more', async () => {
    const { messages } = consumerOf([message(1, 0)]);
    const deliveries = deliveriesOf(messages, async () => 5, patience(10, { idleMs: 10, stalledMs: 60 }))[Symbol.asyncIterator]();
    expect((await take(deliveries, 1)).length).toBe(1);
    const started = Date.now();
    await expect(deliveries.next()).rejects.toThrow(ConsumerStalledError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(60);
  });

  it('waits quietly, looking now and then, while the server holds nothing more', async () => {
    let asks = 0;
    const { messages } = consumerOf([message(1, 0)]);
    const deliveries = deliveriesOf(messages, async () => {
      asks++;
      return 1;
    }, patience(10, { idleMs: 10, stalledMs: 30 }))[Symbol.asyncIterator]();
    expect((await take(deliveries, 1)).length).toBe(1);
    const more = await Promise.race([deliveries.next().then(() => 'delivered'), new Promise((resolve) => setTimeout(() => resolve('quiet'), 120))]);
    expect(more).toBe('quiet');
    expect(asks).toBeGreaterThanOrEqual(3);
  });

  it('counts a message already waiting in the client\'s queue as following, when the server counted none', async () => {
    // Live: the server sends each message as it is stored, counting nothing after it; the reader was
    // busy meanwhile, so three wait in the client's queue, and a fourth comes only later.
    const queued = [message(7, 0), message(8, 0), message(9, 0)];
    let handedOn = 0;
    let release: () => void = () => undefined;
    const later = new Promise<void>((resolve) => (release = resolve));
    opened.push(release);
    async function* clientQueue(): AsyncGenerator<Message> {
      for (const queuedMessage of queued) {
        handedOn++;
        yield queuedMessage;
      }
      await later;
      handedOn++;
      yield message(10, 0);
    }
    const local = { getProcessed: () => handedOn };
    const deliveries = deliveriesOf(clientQueue(), async () => 10, patience(20), local)[Symbol.asyncIterator]();
    expect((await take(deliveries, 3)).map((delivery) => (delivery.kind === 'message' ? delivery.pending : 'idle'))).toEqual([1, 1, 0]);
    release();
    expect(await take(deliveries, 1)).toEqual([{ kind: 'message', message: message(10, 0), pending: 0 }]);
  });

  it('keeps the server\'s count when it says more than the client holds', async () => {
    const { messages } = consumerOf([message(1, 5), message(2, 4)]);
    const deliveries = deliveriesOf(messages, async () => 6, patience(20), { getProcessed: () => 0 })[Symbol.asyncIterator]();
    expect((await take(deliveries, 2)).map((delivery) => (delivery.kind === 'message' ? delivery.pending : 'idle'))).toEqual([5, 4]);
  });
});
