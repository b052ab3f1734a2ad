import type { JsMsg } from '@nats-io/jetstream';

// The reports read from CONTROL, one slot per node: only a node's newest report matters (as in its
// agent's outbox), so a report that a newer one from the same node replaces before it is judged is
// acknowledged unjudged. One node saying ten thousand things costs ten thousand acknowledgements
// and a few judgements, and another node's report is judged next, not after them. A report whose
// facts wait for their interval (fact-budget.ts) stays unacknowledged in CONTROL until they are
// stated, or until a newer report from its node replaces it; a controller that stops hands it back.

/** What became of a report judged: done (acknowledged, handed back or let go), or its facts wait until a time. */
export type Judged = { kind: 'done' } | { kind: 'wait'; until: number };

interface Slot {
  /** the newest stream sequence seen from the node: an older report arriving later is replaced already */
  newest: number;
  queued: JsMsg | undefined;
  waiting: { message: JsMsg; timer: NodeJS.Timeout } | undefined;
}

/** How often a report waiting on its facts' interval tells the server it is still being worked on (ack wait is 30 s). */
const WORKING_EVERY_MS = 10_000;

export class ReportQueue {
  private readonly slots = new Map<string, Slot>();
  /** nodes with a report queued, in the order they came */
  private readonly ready = new Set<string>();
  private draining: Promise<void> | undefined;
  private stopped = false;
  private readonly working: NodeJS.Timeout;

  constructor(
    private readonly judge: (message: JsMsg) => Promise<Judged>,
    private readonly onReplaced: () => void = () => undefined,
  ) {
    this.working = setInterval(() => {
      for (const slot of this.slots.values()) slot.waiting?.message.working();
    }, WORKING_EVERY_MS);
    this.working.unref();
  }

  offer(node: string, message: JsMsg): void {
    if (this.stopped) {
      message.nak();
      return;
    }
    const slot = this.slots.get(node) ?? { newest: 0, queued: undefined, waiting: undefined };
    this.slots.set(node, slot);
    if (message.seq < slot.newest) {
      this.replaced(message);
      return;
    }
    slot.newest = message.seq;
    if (slot.queued && slot.queued.seq !== message.seq) this.replaced(slot.queued);
    if (slot.waiting) {
      clearTimeout(slot.waiting.timer);
      if (slot.waiting.message.seq !== message.seq) this.replaced(slot.waiting.message);
      slot.waiting = undefined;
    }
    slot.queued = message;
    this.ready.add(node);
    this.kick();
  }

  /** Judges nothing more; hands back what was queued or waiting so that the next controller has it at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.working);
    await this.draining;
    for (const slot of this.slots.values()) {
      slot.queued?.nak();
      if (slot.waiting) {
        clearTimeout(slot.waiting.timer);
        slot.waiting.message.nak();
      }
    }
    this.slots.clear();
    this.ready.clear();
  }

  private kick(): void {
    if (this.draining || this.stopped) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.ready.size > 0) this.kick();
    });
  }

  private replaced(message: JsMsg): void {
    message.ack();
    this.onReplaced();
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      const node = this.ready.values().next().value;
      if (node === undefined) return;
      this.ready.delete(node);
      const slot = this.slots.get(node);
      const message = slot?.queued;
      if (!slot || !message) continue;
      slot.queued = undefined;
      let judged: Judged;
      try {
        judged = await this.judge(message);
      } catch {
        // The judge hands back what it cannot take; whatever escaped it comes again all the same.
        message.nak();
        continue;
      }
      if (judged.kind === 'done') continue;
      // A newer report came while this one was judged: it replaces this one, facts waiting and all.
      if (slot.queued || this.stopped) {
        if (this.stopped) message.nak();
        else this.replaced(message);
        continue;
      }
      const timer = setTimeout(() => {
        if (slot.waiting?.message !== message) return;
        slot.waiting = undefined;
        this.offer(node, message);
      }, Math.max(0, judged.until - Date.now()) + 5);
      timer.unref();
      slot.waiting = { message, timer };
    }
  }
}
