export interface BuildRecord {
  newestSource: number;
  version: string;
  foldVersion: string;
  files: string[];
}
export declare const root: string;
export declare const distDir: (at?: string) => string;
export declare const buildRecordFile: (at?: string) => string;
export declare const metafileOf: (at?: string) => string;
export declare const newestSource: (at?: string) => number;
export declare const staleness: (at?: string) => string | undefined;
export declare const buildCli: (at?: string) => Promise<BuildRecord>;
export declare const pruneCli: (at?: string) => void;
export declare const ensureCliBuilt: (options?: { at?: string; say?: (line: string) => void }) => Promise<boolean>;
