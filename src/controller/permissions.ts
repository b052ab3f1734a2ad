// The control plane's own bus account: exactly the subjects it publishes and subscribes to, and
// nothing more (design 25 §4: authority is the narrowest). A fact it could not publish is found by
// a test against a server enforcing this, not by a consumer's missing catch-up.

export interface BusPermissions {
  publish: string[];
  subscribe: string[];
}

export interface ControllerStreams {
  prefix: string;
  logStream: string;
  logPrefix: string;
  nodesStream: string;
  controlStream: string;
  eventsStream: string;
}

export const controllerPermissions = (s: ControllerStreams): BusPermissions => ({
  publish: [
    // the log: appends, and reading it back (direct gets and consumers)
    `${s.logPrefix}.>`,
    // declarations
    `${s.prefix}.node.*.declare`,
    // facts and the controller's seat events
    `${s.prefix}.seat.mesh-controller.event.>`,
    // JetStream: asserting its streams, reading them, its consumers and their acks
    `$JS.API.INFO`,
    ...[s.logStream, s.nodesStream, s.controlStream, s.eventsStream].flatMap((stream) => [
      `$JS.API.STREAM.INFO.${stream}`,
      `$JS.API.STREAM.CREATE.${stream}`,
      `$JS.API.STREAM.UPDATE.${stream}`,
      `$JS.API.STREAM.MSG.GET.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.>`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.>`,
      `$JS.API.CONSUMER.INFO.${stream}.>`,
      `$JS.API.CONSUMER.DELETE.${stream}.>`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.>`,
      `$JS.ACK.${stream}.>`,
    ]),
    // flow control and heartbeats of ordered consumers answer on the consumer's inbox
    '$JS.FC.>',
  ],
  subscribe: [
    // its tools (enrol, and the mesh-controller seat's verbs)
    `${s.prefix}.seat.mesh-controller.tool.>`,
    // heartbeats
    `${s.prefix}.control.*.alive`,
    // replies to its own requests and consumer deliveries
    '_INBOX.>',
  ],
});
