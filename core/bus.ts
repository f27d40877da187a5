/**
 * The kernel event bus. Subjects: state, action, log. Publishers never see a
 * listener's failure: each listener runs in its own try/catch and a failure
 * is reported to the error sink (the logger, which keeps it out of the bus).
 * Listeners are registered per owner so an owner's `stop` removes them all.
 */
export type Subject = 'state' | 'action' | 'log';
export const Subjects: readonly Subject[] = ['state', 'action', 'log'];

/** A listener may be async: a rejection is reported like a throw. */
export type Listener = (data: any, subject: Subject) => void | Promise<unknown>;

interface Entry { owner: string; listener: Listener }

export class EventBus {
  private readonly listeners = new Map<Subject, Entry[]>(Subjects.map((s) => [s, []]));
  /** where listener failures are reported; set by the logger at wiring time */
  onListenerError: (owner: string, subject: Subject, err: unknown) => void = () => {};

  on(owner: string, subject: Subject, listener: Listener): void {
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

  emit(subject: Subject, data: unknown): void {
    const list = this.listeners.get(subject);
    if (!list) return;
    for (const { owner, listener } of list) {
      try {
        const r: unknown = listener(data, subject);
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

  private report(owner: string, subject: Subject, err: unknown): void {
    try { this.onListenerError(owner, subject, err); } catch { /* the sink must not throw into publishers */ }
  }

  count(subject: Subject): number {
    return this.listeners.get(subject)?.length ?? 0;
  }
}
