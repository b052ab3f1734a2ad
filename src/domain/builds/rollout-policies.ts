// What a new version of a module does to its nodes: roll out, or be recorded only. Apart from the
// events' schemas so the CLI's definition (`mesh module rollout`) can offer them without loading zod.
export const ROLLOUT_POLICIES = ['roll-out', 'record'] as const;
export type RolloutPolicy = (typeof ROLLOUT_POLICIES)[number];
