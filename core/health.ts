import { injectable } from 'tsyringe';

/** The property of an error that carries what /health may say of it (healthReason). */
const Reason = Symbol('healthReason');

/**
 * Give `err` the words /health shows for it: what is wrong and what it
 * means, with nothing secret (no key, no address or password of a server,
 * no path outside the controller's folder). Errors without such words show
 * only their kind: a message may hold anything.
 */
export function healthReason<E>(err: E, reason: string): E {
  if (typeof err === 'object' && err !== null) (err as Record<symbol, unknown>)[Reason] = reason;
  return err;
}

export function reasonOf(err: unknown): string | undefined {
  const r = typeof err === 'object' && err !== null ? (err as Record<symbol, unknown>)[Reason] : undefined;
  return typeof r === 'string' ? r : undefined;
}

/**
 * What keeps the controller from working fully while it serves (a plugin
 * not started, a user db it cannot read): GET /health answers `degraded`
 * with these reasons, still 200 — the controller serves, and a supervisor
 * that restarts on failure would not mend a damaged file.
 */
@injectable()
export class Health {
  private readonly problems = new Map<string, string>();

  /** `what` is degraded for `reason` (replaces what it said before). */
  report(what: string, reason: string): void {
    this.problems.set(what, reason);
  }

  clear(what: string): void {
    this.problems.delete(what);
  }

  /** "what: reason", in the order they came; empty when nothing is wrong. */
  degraded(): string[] {
    return [...this.problems].map(([what, reason]) => `${what}: ${reason}`);
  }
}
