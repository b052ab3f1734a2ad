import type { MeshState } from '../mesh/state.js';
import { registeredModules } from './state.js';

// A contract is what a consumer may read from a provision: its fields, and which are secret. One
// per provision name (design 27): the mesh's own here, the rest as the first provider declared them.

export interface ContractField {
  type: string;
  secret: boolean;
}

const BUILT_IN: Readonly<Record<string, Record<string, ContractField>>> = {
  'mesh-bus': { url: { type: 'url', secret: false }, credential: { type: 'string', secret: true }, fingerprint: { type: 'string', secret: false } },
  secret: { value: { type: 'string', secret: true } },
  'postgres-database': {
    host: { type: 'string', secret: false },
    port: { type: 'port', secret: false },
    database: { type: 'string', secret: false },
    user: { type: 'string', secret: false },
    password: { type: 'string', secret: true },
  },
  git: { scheme: { type: 'string', secret: false }, host: { type: 'string', secret: false }, port: { type: 'port', secret: false } },
  'artifact-store': { url: { type: 'url', secret: false } },
  'npm-package-registry': { url: { type: 'url', secret: false } },
};

export const knownContractField = (state: MeshState, contract: string, field: string): ContractField | undefined => {
  const builtIn = BUILT_IN[contract]?.[field];
  if (builtIn) return builtIn;
  for (const module of registeredModules(state.catalogue)) {
    const declared = module.manifest.provides.find((p) => p.provision === contract)?.fields?.[field];
    if (declared) return { type: declared.type, secret: declared.secret };
  }
  return undefined;
};

/** Every field of a contract, or undefined when neither the mesh nor any registered provider has declared it. */
export const knownContractFields = (state: MeshState, contract: string): string[] | undefined => {
  const builtIn = BUILT_IN[contract];
  if (builtIn) return Object.keys(builtIn);
  for (const module of registeredModules(state.catalogue)) {
    const declared = module.manifest.provides.find((p) => p.provision === contract)?.fields;
    if (declared) return Object.keys(declared);
  }
  return undefined;
};
