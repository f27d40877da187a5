import crypto from 'node:crypto';
import type { ActionEvent } from './contract';
import type { Item } from './item';
import type { ItemsLimits } from './defaults';

export type ActionStatus = ActionEvent['status'];

/** Statuses after which an action never changes again. */
const FINAL: ReadonlySet<ActionStatus> = new Set(['refused', 'dead', 'canceled', 'ignored', 'failed', 'terminated', 'completed']);

/** How an action ended, as the executor reports it. */
export interface Outcome { status: 'completed' | 'failed' | 'terminated'; exitcode: number | null; out: string; err: string }

/** One unit action: its target, its status history and its outcome. */
export class Action {
  readonly uuid = crypto.randomUUID();
  status: ActionStatus = 'created';
  exitcode: number | null = null;
  out = '';
  err = '';
  readonly time: Record<string, number> = {};
  /** resolves when the action reaches a final status */
  readonly finished: Promise<void>;
  private resolveFinished!: () => void;
  /** set while the script runs: aborting stops it */
  abort?: AbortController;

  constructor(
    readonly item: Item,
    readonly nstatus: number,
    /** undefined: the action leaves the value as it is */
    readonly nvalue: string | null | undefined,
    readonly priority: number,
  ) {
    this.finished = new Promise((r) => { this.resolveFinished = r; });
    this.time.created = Date.now() / 1000;
  }

  get isFinal(): boolean {
    return FINAL.has(this.status);
  }

  /** Enter a status; false when the action is final already (a final status is never left). */
  enter(status: ActionStatus, outcome?: Partial<Outcome>): boolean {
    if (this.isFinal) return false;
    this.status = status;
    this.time[status] = Date.now() / 1000;
    if (outcome?.exitcode !== undefined) this.exitcode = outcome.exitcode;
    if (outcome?.out !== undefined) this.out = outcome.out;
    if (outcome?.err !== undefined) this.err = outcome.err;
    if (this.isFinal) this.resolveFinished();
    return true;
  }

  event(): ActionEvent {
    const { oid, group, id } = this.item.o;
    return {
      uuid: this.uuid, item_oid: oid, item_type: 'unit', item_group: group, item_id: id,
      status: this.status, nstatus: this.nstatus, nvalue: this.nvalue ?? null, priority: this.priority,
      exitcode: this.exitcode, out: this.out, err: this.err, time: { ...this.time },
    };
  }
}

/** What the unit queues need from the item registry. */
export interface ActionHost {
  /** an action status changed: publish it */
  changed(a: Action): void;
  /** run the action's work (script or direct state) and say how it ended */
  execute(a: Action): Promise<Outcome>;
  /** the action starts running: the unit's next state becomes its target */
  starting(a: Action): void;
  /** the action ended: completed sets the state, anything else returns the target to the state */
  ended(a: Action, outcome: Outcome): void;
}

/**
 * Actions of all units: one running at a time per unit, the others waiting
 * by priority (lower first, then first come), at most `max_queued_actions`
 * waiting per unit — past that an action is refused (0: an action that finds
 * the unit busy is refused, as EVA ICS action_queue 0). Results are kept for
 * `result` until they are older than keep_action_history or more than
 * max_action_results finished ones exist (oldest go first).
 */
export class ActionQueues {
  private readonly queues = new Map<string, { running?: Action; waiting: Action[] }>();
  /** every known action by uuid, in creation order (Map keeps insertion order) */
  private readonly results = new Map<string, Action>();
  private finishedCount = 0;
  private stopping = false;

  constructor(private readonly host: ActionHost, private readonly limits: ItemsLimits) {}

  /** Create and queue an action; it may come back refused already. */
  submit(item: Item, nstatus: number, nvalue: string | null | undefined, priority: number): Action {
    const a = new Action(item, nstatus, nvalue, priority);
    this.results.set(a.uuid, a);
    this.host.changed(a);
    const q = this.queue(item.o.oid);
    const full = !!q.running && q.waiting.length >= this.limits.max_queued_actions;
    if (this.stopping || !item.props.action_enabled || full) {
      this.settle(a, 'refused');
      return a;
    }
    // stable: after every waiting action of the same or a more urgent priority
    let at = q.waiting.findIndex((w) => w.priority > priority);
    if (at < 0) at = q.waiting.length;
    q.waiting.splice(at, 0, a);
    a.enter('queued');
    this.host.changed(a);
    this.next(item.o.oid);
    return a;
  }

  get(uuid: string): Action | undefined {
    return this.results.get(uuid);
  }

  all(): Action[] {
    return [...this.results.values()];
  }

  /** Is an action of this unit running or waiting? */
  busy(oid: string): boolean {
    const q = this.queues.get(oid);
    return !!q && (!!q.running || q.waiting.length > 0);
  }

  /** Drop a unit's (empty) queue and its results (destroy). */
  forget(oid: string): void {
    this.queues.delete(oid);
    for (const [uuid, a] of this.results) {
      if (a.item.o.oid === oid && a.isFinal) { this.results.delete(uuid); this.finishedCount--; }
    }
  }

  /** Drop finished results past their age or count. */
  purge(now = Date.now() / 1000): void {
    const oldest = now - this.limits.keep_action_history;
    for (const [uuid, a] of this.results) {
      if (!a.isFinal) continue;
      const ended = a.time[a.status];
      if (ended < oldest || this.finishedCount > this.limits.max_action_results) {
        this.results.delete(uuid);
        this.finishedCount--;
      }
    }
  }

  /** Controller stop: refuse new actions, cancel waiting ones, stop running scripts, wait for them. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    const running: Promise<void>[] = [];
    for (const q of this.queues.values()) {
      for (const a of q.waiting.splice(0)) this.settle(a, 'canceled');
      if (q.running) {
        q.running.abort?.abort();
        running.push(q.running.finished);
      }
    }
    await Promise.all(running);
  }

  private queue(oid: string) {
    let q = this.queues.get(oid);
    if (!q) this.queues.set(oid, (q = { waiting: [] }));
    return q;
  }

  private settle(a: Action, status: ActionStatus, outcome?: Partial<Outcome>): void {
    if (!a.enter(status, outcome)) return;
    this.finishedCount++;
    this.host.changed(a);
    if (this.finishedCount > this.limits.max_action_results) this.purge();
  }

  private next(oid: string): void {
    const q = this.queues.get(oid);
    if (!q || q.running) return;
    const a = q.waiting.shift();
    if (!a) return;
    q.running = a;
    void this.run(a).finally(() => {
      q.running = undefined;
      this.next(oid);
    });
  }

  private async run(a: Action): Promise<void> {
    a.enter('running');
    this.host.changed(a);
    this.host.starting(a);
    let outcome: Outcome;
    try {
      outcome = await this.host.execute(a);
    } catch (err) {
      outcome = { status: 'failed', exitcode: null, out: '', err: (err as Error)?.message ?? String(err) };
    }
    // the state first, so whoever sees the final status reads the new state
    this.host.ended(a, outcome);
    this.settle(a, outcome.status, outcome);
  }
}
