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
/**
 * A plugin's part of /health, read at every request: `state` is shown under
 * the source's name (the notifier host: each notifier's link), `degraded`
 * joins the controller's reasons. Nothing secret: /health needs no key.
 */
export type HealthSource = () => { state?: unknown; degraded?: string[] };

@injectable()
export class Health {
  private readonly problems = new Map<string, string>();
  private readonly sources = new Map<string, { owner: string; source: HealthSource }>();

  /** `owner`'s source, shown as `name` (one source a name; a second one replaces the first). */
  addSource(owner: string, name: string, source: HealthSource): void {
    this.sources.set(name, { owner, source });
  }

  removeOwner(owner: string): void {
    for (const [name, s] of this.sources) if (s.owner === owner) this.sources.delete(name);
  }

  /** `what` is degraded for `reason` (replaces what it said before). */
  report(what: string, reason: string): void {
    this.problems.set(what, reason);
  }

  clear(what: string): void {
    this.problems.delete(what);
  }

  /** The reasons ("what: reason", in the order they came; empty when nothing is wrong) and each source's state. */
  read(): { degraded: string[]; states: Record<string, unknown> } {
    const degraded = [...this.problems].map(([what, reason]) => `${what}: ${reason}`);
    const states: Record<string, unknown> = {};
    for (const [name, { source }] of this.sources) {
      try {
        const r = source();
        if (r.state !== undefined) states[name] = r.state;
        if (r.degraded) degraded.push(...r.degraded);
      } catch {
        degraded.push(`${name}: its state could not be read`);
      }
    }
    return { degraded, states };
  }
}
