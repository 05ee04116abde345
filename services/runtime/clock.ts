/** Time source, injected so tests can move time (expiry, sessions, throttling). */
export interface Clock {
  now(): Date;
}

/** The real clock. */
export const systemClock: Clock = { now: () => new Date() };
