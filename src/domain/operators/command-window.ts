import { z } from 'zod';
import type { Decision } from '../decision.js';
import { defineEvent } from '../events/registry.js';
import type { MeshState } from '../mesh/state.js';
import { refuseIfAny, type Problem } from '../refusal.js';
import { COMMAND_WINDOW_BOUNDS } from './command-window-bounds.js';

// How long an operator's signed command stays good: the controller refuses one signed further
// from its own clock than this, either way (entry-checks.ts). It is the mesh's, not a process's:
// recorded in the log by an operator's signed command (`mesh operator window 10m`), so every
// controller that takes over judges commands alike; 5 minutes until one is recorded.
// docs/decisions.md, "Signed commands expire, and say what they were signed for".

export const COMMAND_WINDOW_AGGREGATE = 'operators.command-window';

/** The window a mesh has until an operator sets one. */
export const DEFAULT_COMMAND_WINDOW_SECONDS = 5 * 60;

/**
 * Its bounds. Below half a minute a command may lapse on its way on a busy bus or between a
 * laptop and a controller whose clocks drift; above an hour a captured command stays good for
 * too long, and a refused command's id must be remembered as spent for twice the window
 * (refused-commands.ts keeps them for twice the largest window).
 */
export { COMMAND_WINDOW_BOUNDS };

export const CommandWindowSet = defineEvent({
  type: 'operators.command-window-set',
  version: 1,
  schema: z.strictObject({ seconds: z.number().int().min(COMMAND_WINDOW_BOUNDS.minSeconds).max(COMMAND_WINDOW_BOUNDS.maxSeconds) }),
});

export const commandWindowEvents = [CommandWindowSet] as const;

export const setCommandWindowSchema = z.strictObject({ type: z.literal('set-command-window'), seconds: z.number() });
export type SetCommandWindow = z.infer<typeof setCommandWindowSchema>;

/** A window in words: `5 minutes`, `90 seconds`, `1 hour`. */
export const windowInWords = (seconds: number): string => {
  const [value, unit] = seconds % 3600 === 0 ? [seconds / 3600, 'hour'] : seconds % 60 === 0 ? [seconds / 60, 'minute'] : [seconds, 'second'];
  return `${value} ${unit}${value === 1 ? '' : 's'}`;
};

/** The window the mesh has now, in seconds. */
export const commandWindowSeconds = (state: MeshState): number => state.operators.commandWindow?.seconds ?? DEFAULT_COMMAND_WINDOW_SECONDS;

export const decideSetCommandWindow = (command: SetCommandWindow, state: MeshState): Decision => {
  const { seconds } = command;
  const problems: Problem[] = [];
  if (!Number.isInteger(seconds) || seconds < COMMAND_WINDOW_BOUNDS.minSeconds || seconds > COMMAND_WINDOW_BOUNDS.maxSeconds) {
    problems.push({
      what: 'seconds',
      why: `a command window is a whole number of seconds from ${COMMAND_WINDOW_BOUNDS.written}, not ${String(seconds)}: shorter, a command may lapse on its way; longer, a captured command stays good too long`,
      remedy: 'give one from 30s to 1h, e.g. mesh operator window 10m',
    });
  }
  refuseIfAny('setting the window operators\' commands are signed within', problems);
  const before = commandWindowSeconds(state);
  if (state.operators.commandWindow?.seconds === seconds) {
    return { aggregate: COMMAND_WINDOW_AGGREGATE, events: [], summary: `the mesh already accepts commands signed within ${windowInWords(seconds)} of the controller's clock` };
  }
  return {
    aggregate: COMMAND_WINDOW_AGGREGATE,
    events: [{ type: CommandWindowSet.type, data: { seconds } }],
    summary: `the mesh accepts commands signed within ${windowInWords(seconds)} of the controller's clock (it was ${windowInWords(before)})`,
  };
};
