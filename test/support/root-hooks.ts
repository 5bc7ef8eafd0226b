/** Mocha root hooks: placeholder until live services are wired in. */
export const mochaHooks = {};
