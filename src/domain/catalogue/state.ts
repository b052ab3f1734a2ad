import type { Manifest } from './manifest.js';
import { defineSlice } from '../slice.js';

// The catalogue: every module's newest registered definition, and which modules provide each
// contract, kept as they register so "who provides X" costs the providers, not the catalogue.

export interface ModuleState {
  name: string;
  definitionVersion: number;
  digest: string;
  manifest: Manifest;
}

export interface CatalogueState {
  modules: Map<string, ModuleState>;
  /** provision → the modules whose newest definition provides it */
  providers: Map<string, Set<string>>;
}

export const catalogueSlice = defineSlice({
  eventTypes: ['module.registered'] as const,
  empty: (): CatalogueState => ({ modules: new Map(), providers: new Map() }),
  evolve(state, event) {
    const data = event.data;
    for (const provision of state.modules.get(data.module)?.manifest.provides ?? []) state.providers.get(provision.provision)?.delete(data.module);
    state.modules.set(data.module, { name: data.module, definitionVersion: data.definitionVersion, digest: data.digest, manifest: data.manifest });
    for (const provision of data.manifest.provides) {
      let modules = state.providers.get(provision.provision);
      if (!modules) state.providers.set(provision.provision, (modules = new Set()));
      modules.add(data.module);
    }
  },
});

/** A module's newest definition, if it is registered. */
export const moduleNamed = (state: CatalogueState, module: string): ModuleState | undefined => state.modules.get(module);

/** The manifest of a module's newest definition, if it is registered. */
export const manifestOf = (state: CatalogueState, module: string): Manifest | undefined => state.modules.get(module)?.manifest;

/** Every registered module, in the order they first registered. */
export const registeredModules = (state: CatalogueState): IterableIterator<ModuleState> => state.modules.values();

export const registeredModuleNames = (state: CatalogueState): IterableIterator<string> => state.modules.keys();

/** The modules whose newest definition provides `provision`. */
export const providersOf = (state: CatalogueState, provision: string): ModuleState[] => {
  const providers: ModuleState[] = [];
  for (const module of state.providers.get(provision) ?? []) {
    const found = state.modules.get(module);
    if (found) providers.push(found);
  }
  return providers;
};

/** The registered modules by name, read-only: for reads that look modules up many times. */
export const modulesByName = (state: CatalogueState): ReadonlyMap<string, ModuleState> => state.modules;
