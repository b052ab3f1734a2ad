// What a controller logs as it becomes the mesh's writer, in order: the lease taken, commands
// served, every writer's part running. Operators' tooling and the fault tests read these lines.

export const WRITER_TAKEN = 'this controller is the mesh writer';
export const WRITER_SERVING = 'serving as the mesh writer';
/** before it, only commands are served */
export const WRITER_PARTS_RUNNING = 'every part of the mesh writer is running';
