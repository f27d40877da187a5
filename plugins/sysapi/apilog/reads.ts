/**
 * The functions the API call log's "changes only" view (api_log_get c)
 * leaves out: those whose declaration says they change nothing (`changes`,
 * rpc.discover's `x-changes`, the same flag that decides what a read-only
 * token and an MCP read key may call), but for the session's own functions:
 * a login, a logout or a token made read-only is who did what, so the view
 * keeps them. Names declared nowhere count as changes (a probe is worth
 * seeing), as do a drop-in plugin's functions until they say otherwise.
 */
export const SessionFunctions: readonly string[] = ['login', 'logout', 'set_token_readonly'];

/** The names to leave out of "changes only", from the OpenRPC methods of this controller. */
export function readFunctions(methods: readonly { name: string; 'x-changes'?: boolean }[]): string[] {
  return methods.filter((m) => m['x-changes'] === false && !SessionFunctions.includes(m.name)).map((m) => m.name);
}

/** The statuses of a call refused: a wrong or missing key, password or token, a right the key lacks (2), a read-only token (15). */
export const RefusedStatuses: readonly string[] = ['AccessDenied', 'TokenRestricted'];
