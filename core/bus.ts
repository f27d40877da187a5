/**
 * The kernel event bus. Subjects: state, action, log. Publishers never see a
 * listener's failure: each listener runs in its own try/catch and a failure
 * is reported to the error sink (the logger, which keeps it out of the bus).
 * Listeners are registered per owner so an owner's `stop` removes them all.
 */

/**
 * What each subject carries. Empty here: whoever publishes a subject declares
 * its event type by declaration merging, next to that type (the log's `log`
 * in core/log.ts; a plugin's e.g.
 * `declare module '../../core/bus' { interface BusEvents { state: StateEvent } }`),
 * so the bus imports none of its publishers.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface BusEvents {}
export type BusSubject = keyof BusEvents;
/** The subjects notifiers subscribe to (spec); `state` and `action` are typed by the items plugin. */
export const Subjects: readonly BusSubject[] = ['state', 'action', 'log'];

/** A listener may be async: a rejection is reported like a throw. */
export type Listener<S extends BusSubject = BusSubject> = (data: BusEvents[S], subject: S) => void | Promise<unknown>;

interface Entry { owner: string; listener: Listener<never> }

export class EventBus {
  private readonly listeners = new Map<BusSubject, Entry[]>(Subjects.map((s) => [s, []]));
  /** where listener failures are reported; set by the logger at wiring time */
  onListenerError: (owner: string, subject: BusSubject, err: unknown) => void = () => {};

  on<S extends BusSubject>(owner: string, subject: S, listener: Listener<S>): void {
    const list = this.listeners.get(subject);
    if (!list) throw new Error(`unknown event subject: ${subject}`);
    list.push({ owner, listener });
  }

  /** Remove every listener the owner registered. */
  offOwner(owner: string): void {
    for (const [subject, list] of this.listeners) {
      this.listeners.set(subject, list.filter((e) => e.owner !== owner));
    }
  }

  emit<S extends BusSubject>(subject: S, data: BusEvents[S]): void {
    const list = this.listeners.get(subject);
    if (!list) return;
    for (const { owner, listener } of list) {
      try {
        const r: unknown = (listener as Listener<S>)(data, subject);
        // an async listener fails later: its rejection is reported the same
        // way (left alone it would be an unhandled rejection, which ends the process)
        if (typeof (r as PromiseLike<unknown> | undefined)?.then === 'function') {
          Promise.resolve(r).catch((err) => this.report(owner, subject, err));
        }
      } catch (err) {
        this.report(owner, subject, err);
      }
    }
  }

  private report(owner: string, subject: BusSubject, err: unknown): void {
    try { this.onListenerError(owner, subject, err); } catch { /* the sink must not throw into publishers */ }
  }

  count(subject: BusSubject): number {
    return this.listeners.get(subject)?.length ?? 0;
  }
}
