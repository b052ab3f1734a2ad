import { existsSync } from 'node:fs';
import { dockerRunArguments, type DockerEngine } from '../docker.js';
import { applied, crashLooping, held, refused, type Outcome } from '../outcome.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A declared container, run by the Docker engine with its restart policy as the supervisor. The
// agent labels what it creates with the resource's identity: a container by that name without the
// label is not the mesh's, and the agent does not touch it.

export const containerDriver = (context: DriverContext, docker: DockerEngine): Driver<'container'> => ({
  async apply({ resource, record, identity, digest, gate }: Applying<'container'>): Promise<Outcome> {
    const engine = await docker.answers();
    if (!engine.ok) return held(engine.reason);
    const name = record?.name ?? `mesh-${resource.key.replace('/', '-')}`;
    const found = await inspect(docker, name);
    if (found && found.identity !== identity && !record) return refused(`a container named ${name} exists that the mesh did not start`);
    if (!found) {
      if (gate) return held(gate);
      const missing = resource.envFiles.find((f) => !existsSync(f.path));
      if (missing) return held(`waiting for ${missing.path} (${missing.reason})`);
      await docker.run(['run', '--detach', '--name', name, '--restart', 'unless-stopped', '--label', `mesh.identity=${identity}`, '--label', `mesh.key=${resource.key}`, ...dockerRunArguments(resource)]);
    } else if (found.status !== 'running' && found.status !== 'restarting') {
      await docker.run(['start', name]);
    }
    context.records.put({ id: record?.id ?? newRecordId(), kind: 'container', key: resource.key, module: resource.module, identity, digest, name });
    if (found?.status === 'restarting' && found.restarts >= context.timings.crashLoopAfter) return crashLooping(found.restarts, `container ${name} keeps restarting`);
    return applied;
  },

  async undeclare(record) {
    const engine = await docker.answers();
    if (!engine.ok) throw new Error(`cannot remove container ${record.name}: ${engine.reason}`);
    if (await inspect(docker, record.name)) await docker.run(['rm', '--force', record.name]);
    context.records.delete(record.id);
  },
});

const inspect = async (docker: DockerEngine, name: string): Promise<{ status: string; restarts: number; identity: string } | undefined> => {
  try {
    const line = await docker.run(['inspect', '--format', '{{.State.Status}} {{.RestartCount}} {{index .Config.Labels "mesh.identity"}}', name]);
    const [status = '', restarts = '0', identity = ''] = line.split(' ');
    return { status, restarts: Number(restarts), identity };
  } catch {
    return undefined;
  }
};
