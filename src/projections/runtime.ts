// How node should run a process that folds the log into projections (the controller). Catching
// up, it makes and drops a few hundred thousand small objects a second — messages, decoded
// events, rows — most of which live for one batch. With V8's default young generation (16 MiB
// semi-spaces) a batch in flight outlives two scavenges and is copied into the old generation,
// and the collector then costs a fifth of the projector's time; at 64 MiB they die young.
// Measured with `npm run bench:projections`.

export const FOLDING_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];
