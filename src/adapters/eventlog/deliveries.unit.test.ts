import { describe, expect, it } from '@jest/globals';
import { deliveriesOf, type Delivery } from './deliveries.js';

interface Message {
  seq: number;
  info: { pending: number };
}

/** A consumer that delivers `first`, then `later` once `release` is called, then waits for ever. */
const consumerOf = (first: Message[], later: Message[] = []): { messages: AsyncIterable<Message>; release: () => void } => {
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  async function* messages(): AsyncGenerator<Message> {
    yield* first;
    await released;
    yield* later;
    await new Promise(() => undefined);
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

describe('deliveries of a consumer whose pending count can be wrong', () => {
  it('passes messages on as they come, with the pending the server gave', async () => {
    const { messages } = consumerOf([message(1, 2), message(2, 1), message(3, 0)]);
    const taken = await take(deliveriesOf(messages, async () => 3, 20)[Symbol.asyncIterator](), 3);
    expect(taken).toEqual([
      { kind: 'message', message: message(1, 2), pending: 2 },
      { kind: 'message', message: message(2, 1), pending: 1 },
      { kind: 'message', message: message(3, 0), pending: 0 },
    ]);
  });

  it('says the head was reached when what the server promised never comes and the server holds nothing later', async () => {
    const asked: number[] = [];
    const { messages } = consumerOf([message(38, 1), message(39, 1)]);
    const deliveries = deliveriesOf(messages, async () => {
      asked.push(39);
      return 39;
    }, 20)[Symbol.asyncIterator]();
    const taken = await take(deliveries, 3);
    expect(taken.map((d) => (d.kind === 'message' ? d.message.seq : `head ${d.seq}`))).toEqual([38, 39, 'head 39']);
    expect(asked.length).toBe(1);
  });

  it('waits on while the server holds more than was delivered, and asks again', async () => {
    let asks = 0;
    const { messages, release } = consumerOf([message(40, 1)], [message(41, 0)]);
    const deliveries = deliveriesOf(messages, async () => {
      asks++;
      if (asks === 2) release();
      return 41;
    }, 20)[Symbol.asyncIterator]();
    const taken = await take(deliveries, 2);
    expect(taken.map((d) => (d.kind === 'message' ? d.message.seq : `head ${d.seq}`))).toEqual([40, 41]);
    expect(asks).toBeGreaterThanOrEqual(2);
  });

  it('does not ask the server after a delivery that said it was the last', async () => {
    let asks = 0;
    const { messages } = consumerOf([message(5, 0)]);
    const deliveries = deliveriesOf(messages, async () => {
      asks++;
      return 5;
    }, 5)[Symbol.asyncIterator]();
    expect((await take(deliveries, 1)).length).toBe(1);
    const more = await Promise.race([deliveries.next().then(() => 'delivered'), new Promise((resolve) => setTimeout(() => resolve('quiet'), 60))]);
    expect(more).toBe('quiet');
    expect(asks).toBe(0);
  });

  it('waits on when the server cannot be asked', async () => {
    let asks = 0;
    const { messages, release } = consumerOf([message(7, 1)], [message(8, 0)]);
    const deliveries = deliveriesOf(messages, async () => {
      asks++;
      if (asks === 2) release();
      throw new Error('no responders');
    }, 10)[Symbol.asyncIterator]();
    const taken = await take(deliveries, 2);
    expect(taken.map((d) => (d.kind === 'message' ? d.message.seq : `head ${d.seq}`))).toEqual([7, 8]);
  });
});
