import { afterEach, describe, expect, it } from '@jest/globals';
import type { JetStreamClient, PubAck } from '@nats-io/jetstream';
import { handleCommand } from '../../src/adapters/eventlog/command-handler.js';
import type { PublishOptions } from '../../src/adapters/eventlog/jetstream-log.js';
import type { Decider } from '../../src/domain/decider.js';
import { meta, openTestLog, type TestLog } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';

// The server stores the message, but its acknowledgement never reaches the writer: the case
// a retry must survive. The publish seam lets a real publish happen and then loses the answer.
const losingAcknowledgements = (lose: (options: PublishOptions) => boolean) => async (js: JetStreamClient, subject: string, payload: Uint8Array, options: PublishOptions): Promise<PubAck> => {
  const ack = await js.publish(subject, payload, options);
  // Not a timeout (which the log itself retries): the writer is gone before the answer arrives.
  if (lose(options)) throw new Error('connection closed (acknowledgement lost in the test)');
  return ack;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('commands are idempotent by command id', () => {
  let t: TestLog;
  afterEach(async () => t.close());

  it('a retry inside the server window returns the original outcome and appends nothing', async () => {
    t = await openTestLog();
    let lose = true;
    const flaky = t.another({ publish: losingAcknowledgements(() => lose) });
    const aggregate = `counter.${uniqueName('c')}`;
    await expect(flaky.append(aggregate, [{ type: 'test.counted', data: { n: 1 } }], 0, meta('retry-me'))).rejects.toThrow('acknowledgement lost');

    lose = false;
    const retried = await flaky.append(aggregate, [{ type: 'test.counted', data: { n: 1 } }], 0, meta('retry-me'));
    expect(retried).toMatchObject({ duplicate: true, version: 1, expectedVersion: 0 });
    const history = await t.log.readAggregate(aggregate);
    expect(history.events).toHaveLength(1);
    expect(retried.seq).toBe(history.events[0]?.seq);
  });

  it('a retry after the server window has passed still appends nothing, even after other commands landed', async () => {
    t = await openTestLog({ duplicateWindowMs: 500 });
    let lose = false;
    const flaky = t.another({ publish: losingAcknowledgements(() => lose) });
    const aggregate = `counter.${uniqueName('c')}`;
    await flaky.append(aggregate, [{ type: 'test.counted', data: { n: 0 } }], 0, meta(uniqueName('first')));
    lose = true;
    await expect(flaky.append(aggregate, [{ type: 'test.counted', data: { n: 1 } }, { type: 'test.counted', data: { n: 2 } }], 1, meta('late-retry'))).rejects.toThrow(
      'acknowledgement lost',
    );
    lose = false;
    await t.log.append(aggregate, [{ type: 'test.counted', data: { n: 3 } }], 3, meta(uniqueName('other')));
    await sleep(1_200); // the server has forgotten the message id by now

    const retried = await flaky.append(aggregate, [{ type: 'test.counted', data: { n: 1 } }, { type: 'test.counted', data: { n: 2 } }], 1, meta('late-retry'));
    expect(retried).toMatchObject({ duplicate: true, expectedVersion: 1, version: 3 });
    expect(retried.events.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }]);
    const history = await t.log.readAggregate(aggregate);
    expect(history.events.map((e) => e.commandId).filter((id) => id === 'late-retry')).toHaveLength(2);
    expect(history.version).toBe(4);
  });

  it('a whole command retried through the handler after its acknowledgement was lost acts once', async () => {
    t = await openTestLog({ duplicateWindowMs: 300 });
    interface Tally {
      total: number;
    }
    const tally: Decider<{ add: number }, Tally> = {
      initialState: () => ({ total: 0 }),
      decide: (command) => [{ type: 'test.counted', data: { n: command.add } }],
      evolve: (state, event) => (event.type === 'test.counted' ? { total: state.total + (event.data as { n: number }).n } : state),
    };
    let lose = true;
    const flaky = t.another({ publish: losingAcknowledgements(() => lose) });
    const aggregate = `tally.${uniqueName('t')}`;
    await expect(handleCommand(flaky, tally, aggregate, { add: 5 }, meta('add-5'))).rejects.toThrow('acknowledgement lost');
    lose = false;
    await sleep(600);

    // The retry re-reads and would decide again at the new version; the handler sees its own command in the history.
    const retried = await handleCommand(t.another(), tally, aggregate, { add: 5 }, meta('add-5'));
    expect(retried.duplicate).toBe(true);
    expect(retried.state.total).toBe(5);
    const history = await t.log.readAggregate(aggregate);
    expect(history.events).toHaveLength(1);
  });

  it('many retries with lost acknowledgements make exactly one commit each', async () => {
    t = await openTestLog();
    const answered = new Set<string>();
    // Every command's first acknowledgement is lost.
    const flaky = t.another({ publish: losingAcknowledgements((options) => !answered.has(options.msgID) && Boolean(answered.add(options.msgID))) });
    const aggregates = Array.from({ length: 25 }, () => `counter.${uniqueName('m')}`);
    await Promise.all(
      aggregates.map(async (aggregate, i) => {
        await expect(flaky.append(aggregate, [{ type: 'test.counted', data: { n: i } }], 0, meta(`cmd-${i}`))).rejects.toThrow('acknowledgement lost');
        const retried = await flaky.append(aggregate, [{ type: 'test.counted', data: { n: i } }], 0, meta(`cmd-${i}`));
        expect(retried.duplicate).toBe(true);
      }),
    );
    expect((await t.jsm.streams.info(t.settings.stream)).state.messages).toBe(aggregates.length);
  });
});
