import { hasWildcard, topicMatches } from './topics';
import type { Qos } from './settings';

/** `retained`: the broker sent it because of a new subscription (what it kept), not as it was published. */
export type MessageHandler = (topic: string, payload: Buffer, retained: boolean) => void;

interface Route { owner: string; filter: string; qos: Qos; handler: MessageHandler }

/**
 * Who listens to which topic on one connection. Every part of the endpoint
 * (items, logs, API, core scripts) adds routes under its own owner name; the
 * broker sees one subscription per filter, at the highest QoS asked for.
 * Exact topics are found by map, wildcard filters by matching.
 */
export class Routes {
  private readonly exact = new Map<string, Route[]>();
  private readonly wild: Route[] = [];
  /** called when a filter appears, changes QoS (qos) or goes away (undefined) */
  onFilter: (filter: string, qos: Qos | undefined) => void = () => {};
  /** called when a handler throws */
  onError: (owner: string, topic: string, err: unknown) => void = () => {};

  private routesOf(filter: string): Route[] {
    if (hasWildcard(filter)) return this.wild.filter((r) => r.filter === filter);
    return this.exact.get(filter) ?? [];
  }

  private maxQos(filter: string): Qos | undefined {
    const rs = this.routesOf(filter);
    return rs.length ? (Math.max(...rs.map((r) => r.qos)) as Qos) : undefined;
  }

  /** Add or replace the owner's route for a filter. */
  add(owner: string, filter: string, qos: Qos, handler: MessageHandler): void {
    const before = this.maxQos(filter);
    this.drop(owner, filter);
    const route = { owner, filter, qos, handler };
    if (hasWildcard(filter)) this.wild.push(route);
    else {
      const list = this.exact.get(filter);
      if (list) list.push(route);
      else this.exact.set(filter, [route]);
    }
    const after = this.maxQos(filter);
    if (after !== before) this.onFilter(filter, after);
  }

  /** Remove the owner's route for a filter, or every route of the owner. */
  remove(owner: string, filter?: string): void {
    const filters = filter !== undefined ? [filter] : this.filtersOf(owner);
    for (const f of filters) {
      const before = this.maxQos(f);
      this.drop(owner, f);
      const after = this.maxQos(f);
      if (after !== before) this.onFilter(f, after);
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

  /** Every filter with the QoS to subscribe it at (after a reconnect). */
  all(): Map<string, Qos> {
    const out = new Map<string, Qos>();
    for (const f of [...this.exact.keys(), ...this.wild.map((r) => r.filter)]) out.set(f, this.maxQos(f)!);
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
