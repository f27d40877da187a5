/**
 * The one catalogue of API errors. Every failure a function can report is one
 * of these: a stable JSON RPC code and the HTTP status of the direct API
 * (spec "Errors"; core/README.md, Using the API, says which failure is which code).
 */
export const ErrorKinds = {
  not_found: { code: 1, status: 404 },
  access_denied: { code: 2, status: 403 },
  method_not_found: { code: 6, status: 405 },
  function_failed: { code: 10, status: 500 },
  invalid_params: { code: 11, status: 400 },
  already_exists: { code: 12, status: 409 },
  busy: { code: 13, status: 409 },
  not_implemented: { code: 14, status: 405 },
  /** a read-only token (set_token_readonly) calling a function that may change something (EVA ICS 3.3: result_token_restricted) */
  token_restricted: { code: 15, status: 403 },
  /**
   * a function declared `fenced` called on a standby controller (plugins/cluster
   * failover): EVA ICS 3.3's client code 5, "not ready"; 503, as a proxy or balancer
   * understands it: ask the active one
   */
  standby: { code: 5, status: 503 },
  /** an answer past [webapi] max_answer_size: the code of busy, the status of a body too large */
  too_large: { code: 13, status: 413 },
} as const;

export type ErrorKind = keyof typeof ErrorKinds;

export class ApiError extends Error {
  readonly kind: ErrorKind;
  constructor(kind: ErrorKind, message: string) {
    super(message);
    this.kind = kind;
    this.name = 'ApiError';
  }
  get code(): number {
    return ErrorKinds[this.kind].code;
  }
  get status(): number {
    return ErrorKinds[this.kind].status;
  }
}

/** Shorthands so handlers read as `throw notFound('lock x')`. */
export const notFound = (what: string) => new ApiError('not_found', `${what} not found`);
export const accessDenied = (msg = 'access denied') => new ApiError('access_denied', msg);
export const invalidParams = (msg: string) => new ApiError('invalid_params', msg);
export const alreadyExists = (what: string) => new ApiError('already_exists', `${what} already exists`);
export const busy = (msg: string) => new ApiError('busy', msg);
export const functionFailed = (msg: string) => new ApiError('function_failed', msg);
export const tokenRestricted = () => new ApiError('token_restricted', 'token restricted');
export const methodNotFound = (name: string) => new ApiError('method_not_found', `method not found: ${name}`);

/**
 * Turn anything thrown by a handler into an ApiError. Unknown errors become
 * function_failed with a generic message: the real error (and its stack) goes
 * to the log, never to the client.
 */
export function toApiError(err: unknown): { error: ApiError; internal: boolean } {
  if (err instanceof ApiError) return { error: err, internal: false };
  return { error: functionFailed('function failed, see the controller log'), internal: true };
}

/**
 * Why a plugin was found but not started: stable codes (like the API error
 * codes above) that the log line and PluginHost.skipped carry, so operators
 * and tests match the code, not the wording of the message.
 */
export const SkipCodes = {
  /** the module could not be loaded (syntax error, a failing import) */
  load_failed: 'the module failed to load',
  /** the module exports no valid plugin definition */
  malformed: 'the plugin definition is malformed',
  /** another plugin of the same name is already loaded */
  duplicate_name: 'a plugin of the same name is already loaded',
  /** the plugin's `kernel` range does not include this kernel's API version */
  kernel_mismatch: 'written for another kernel API version',
  /** another plugin already declares a service this one `provides` */
  service_taken: 'a service it provides is provided by another plugin',
  /** no plugin provides a service named in `needs` */
  need_missing: 'a service it needs is provided by no plugin',
  /** the plugins providing what it needs need it in turn */
  need_cycle: 'its needs form a cycle',
  /** the plugin providing a needed service was skipped or did not provide it */
  need_unavailable: 'a service it needs did not start',
  /** start threw or rejected (a malformed function declaration, a service it did not declare) */
  start_failed: 'start failed',
  /** start did not finish within plugin_start_timeout */
  start_timeout: 'start did not finish in time',
} as const;

export type SkipCode = keyof typeof SkipCodes;
