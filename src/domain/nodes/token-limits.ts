// How long an enrolment token may live. While it lives it is a user on the bus (the enrolment
// identity its secret derives) and a way into the mesh for whoever holds it, so it is meant to be
// spent within days; the CLI refuses a longer --ttl and the controller a later expiry.

export const TOKEN_TTL_MAX = {
  ms: 30 * 86_400_000,
  written: '30d',
  why: 'a token is a way into the mesh, and a user on its bus, for as long as it lives: make a new one when a machine is ready to join',
} as const;
