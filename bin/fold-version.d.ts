export declare const FOLD_ROOTS: readonly string[];
export declare const FOLD_VERSION_DEFINE: string;
export declare const foldSourceFiles: (root: string) => string[];
export declare const foldCodeVersionOf: (root: string) => string;
export declare const foldVersionDefine: (root: string) => Record<string, string>;
