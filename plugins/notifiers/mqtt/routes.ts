import { hasWildcard, topicMatches } from './topics';
import type { Qos } from './settings';

/** `retained`: the broker sent it because of a new subscription (what it kept), not as it was published. */
export type MessageHandler = (topic: string, payload: Buffer, retained: boolean) => void;

interface Route { owner: string; filter: string; qos: Qos; handler: MessageHandler; shared: boolean }

/**
 * How the broker is asked for a filter: the highest QoS any route wants, and
 * whether it may be a shared subscription (every route of it allows that:
 * one that must see every message keeps the filter unshared).
 */
export interface FilterState { qos: Qos; shared: boolean }

const sameState = (a: FilterState | undefined, b: FilterState | undefined) => a?.qos === b?.qos && a?.shared === b?.shared;

/**
 * Who listens to which topic on one connection. Every part of the endpoint
 * (items, logs, API, core scripts) adds routes under its own owner name; the
 * broker sees one subscription per filter, at the highest QoS asked for.
 * Exact topics are found by map, wildcard filters by matching.
 */
export class Routes {
  private readonly exact = new Map<string, Route[]>();
  private readonly wild: Route[] = [];
  /** called when a filter appears, changes QoS or sharing (`now`) or goes away (`now` undefined); `before`: how it was */
  onFilter: (filter: string, now: FilterState | undefined, before: FilterState | undefined) => void = () => {};
  /** called when a handler throws */
  onError: (owner: string, topic: string, err: unknown) => void = () => {};

  private routesOf(filter: string): Route[] {
    if (hasWildcard(filter)) return this.wild.filter((r) => r.filter === filter);
    return this.exact.get(filter) ?? [];
  }

  private state(filter: string): FilterState | undefined {
    const rs = this.routesOf(filter);
    return rs.length ? { qos: Math.max(...rs.map((r) => r.qos)) as Qos, shared: rs.every((r) => r.shared) } : undefined;
  }

  /**
   * Add or replace the owner's route for a filter. `shared`: the route may
   * take a share of the filter's messages (a shared subscription, where the
   * connection has a group) rather than every one.
   */
  add(owner: string, filter: string, qos: Qos, handler: MessageHandler, shared = false): void {
    const before = this.state(filter);
    this.drop(owner, filter);
    const route = { owner, filter, qos, handler, shared };
    if (hasWildcard(filter)) this.wild.push(route);
    else {
      const list = this.exact.get(filter);
      if (list) list.push(route);
      else this.exact.set(filter, [route]);
    }
    const after = this.state(filter);
    if (!sameState(after, before)) this.onFilter(filter, after, before);
  }

  /** Remove the owner's route for a filter, or every route of the owner. */
  remove(owner: string, filter?: string): void {
    const filters = filter !== undefined ? [filter] : this.filtersOf(owner);
    for (const f of filters) {
      const before = this.state(f);
      this.drop(owner, f);
      const after = this.state(f);
      if (!sameState(after, before)) this.onFilter(f, after, before);
    }
  }

  private drop(owner: string, filter: string): void {
    if (hasWildcard(filter)) {
      const i = this.wild.findIndex((r) => r.owner === owner && r.filter === filter);
      if (i >= 0) this.wild.splice(i, 1);
      return;
    }
    const list = this.exact.get(filter);
    if (!list) return;
    const rest = list.filter((r) => r.owner !== owner);
    if (rest.length) this.exact.set(filter, rest);
    else this.exact.delete(filter);
  }

  filtersOf(owner: string): string[] {
    const out = new Set<string>();
    for (const list of this.exact.values()) for (const r of list) if (r.owner === owner) out.add(r.filter);
    for (const r of this.wild) if (r.owner === owner) out.add(r.filter);
    return [...out];
  }

  /** Every filter with how to subscribe it (after a reconnect). */
  all(): Map<string, FilterState> {
    const out = new Map<string, FilterState>();
    for (const f of [...this.exact.keys(), ...this.wild.map((r) => r.filter)]) out.set(f, this.state(f)!);
    return out;
  }

  /** Hand a message to every route whose filter matches it. */
  deliver(topic: string, payload: Buffer, retained = false): number {
    let n = 0;
    const run = (r: Route) => {
      n++;
      try { r.handler(topic, payload, retained); } catch (err) { this.onError(r.owner, topic, err); }
    };
    // copies: a handler may add or remove routes
    for (const r of [...(this.exact.get(topic) ?? [])]) run(r);
    for (const r of [...this.wild]) if (topicMatches(r.filter, topic)) run(r);
    return n;
  }
}
