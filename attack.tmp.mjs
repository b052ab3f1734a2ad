import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
const nc = await connect({ servers: 'nats://127.0.0.1:44322' });
const ack = await jetstream(nc).publish(`mesh.log.${process.argv[2]}`, process.argv[3]);
console.log(`published at seq ${ack.seq}`);
await nc.close();
