import fs from 'node:fs';
import path from 'node:path';
import type { PluginContext } from '../../../core/plugin';
import type { Subject } from '../contract';
import { describe, type ModuleLogger } from '../../../core/log';
import { functionFailed } from '../../../core/errors';
import { declsData, settingData } from '../../../core/schema';
import type * as Contract from '../contract';
import type { Endpoint, EndpointFactory, NotifierConfig, NotifierFileSettings, NotifierType } from '../contract';
import { commonConfig, configProblem, deliveryOptions, readNotifierFiles } from './config';
import { CommonSettings, DeliverySettings, FileFields, overflowOf } from './defaults';
import { itemSelected, type ItemRef } from './filter';
import { Delivery } from './delivery';
import { OUTBOX_MAX_AGE, outboxDir } from './outbox';
import type { LetterFilter } from './dead-letters';
import { EventRouter, type Routed } from './router';
import { withDeadline } from '../../../core/toolkit/deadline';
import { endpointFactory, hideSecrets, serializeSettings } from './settings';
import { IntervalResend, MIN_INTERVAL, type ItemStates } from './interval';
import { degradedLine, isBad, publicState, stateOf, type NotifierHealth } from './health';

type TestResult = 'passed' | 'failed' | 'skipped' | 'not run';

/** One loaded notifier: its file, its run-time state, its queue. */
interface Managed {
  config: NotifierConfig;
  /** runtime state; enable/disable_notifier change it until restart */
  enabled: boolean;
  delivery: Delivery;
  type?: NotifierType;
  /** the context of the plugin that registered the type (services for the endpoint) */
  typeCtx?: PluginContext;
  /** how the type creates this controller's endpoints */
  factory?: EndpointFactory;
  endpoint?: Endpoint;
  /** why this notifier cannot run (type missing, config refused by its type) */
  problem?: string;
  test: TestResult;
  /** seconds a send or test may take */
  timeout: number;
  /** the stop under way or done: a notifier stops once */
  stopped?: Promise<void>;
  /** `interval` rounds (3.3): the subscribed states sent again */
  resend?: IntervalResend;
}

/**
 * The notifier host (service `notifiers`): loads the notifier files, matches
 * every bus event against each enabled notifier's subscriptions and hands it
 * to that notifier's own queue. Types come from notifier plugins, which
 * register them while they start; notifiers of a type wait (their queue
 * bounded) until it registers, and are reported when it never does.
 */
export class Host implements Contract.NotifierHost {
  private readonly all = new Map<string, Managed>();
  private readonly types = new Map<string, NotifierType>();
  private readonly routes: Routed[] = [];
  private readonly router = new EventRouter(this.routes);
  /** the notification system's own records: never `log` events */
  private readonly log: ModuleLogger;
  /** a failover standby: no event is taken, no endpoint started (README.md "On a failover standby") */
  private paused = false;
  /** notifiers whose endpoint waits for this controller to be active */
  private readonly deferred = new Set<Managed>();

  constructor(private readonly ctx: PluginContext) {
    this.log = ctx.quietLog('notifiers');
  }

  load(): void {
    // [notifiers] and the files were checked before the controller started (exit 3 on an error):
    // what is still wrong here changed since, and only that notifier is left out
    const ini = this.ctx.config.section('notifiers', DeliverySettings);
    for (const f of readNotifierFiles(this.ctx.paths.notifyDir)) {
      const { cfg, problems } = f.error ? { problems: [f.error] } : commonConfig(f.raw, f.id);
      if (!cfg) {
        this.log.error(`notifier file ${f.file} skipped: ${problems.join('; ')}`);
        continue;
      }
      const opts = deliveryOptions(cfg, ini);
      const timeout = cfg.timeout ?? this.ctx.config.server.timeout;
      const delivery = new Delivery(f.id, opts, timeout, this.ctx.quietLog(`notifier.${f.id}`));
      // the durable default (refuse) once the type says whether it is durable (attach)
      delivery.setOverflow(overflowOf(cfg, false));
      const n: Managed = { config: cfg, enabled: cfg.enabled, delivery, test: 'not run', timeout };
      this.all.set(f.id, n);
      this.routes.push({ events: cfg.events, accepts: () => n.enabled && !n.problem && !this.paused, push: (subject, data) => delivery.push(subject, data) });
      this.intervalOf(n);
    }
    this.router.reset();
  }

  /** 3.3 `interval`: a notifier with one and a state subscription gets every subscribed state again each interval. */
  private intervalOf(n: Managed): void {
    const every = typeof n.config.interval === 'number' ? n.config.interval : 0;
    const sub = n.config.events.find((s) => s.subject === 'state');
    if (every <= 0 || !sub) return;
    const items = (): ItemStates | undefined => (this.ctx.hasService('items') ? this.ctx.service('items') : undefined);
    n.resend = new IntervalResend(sub, {
      accepts: () => n.enabled && !n.problem && !!n.endpoint && !this.paused,
      queued: () => ({ size: n.delivery.stats().queued, bound: n.delivery.queueBound }),
      push: (event) => n.delivery.push('state', event),
    }, items);
    const resend = n.resend;
    this.ctx.interval(() => resend.tick(), Math.max(every, MIN_INTERVAL) * 1000);
  }

  /**
   * Before a call makes events of an item (update, action): undefined when
   * every enabled notifier that would take them has room, else a wait for
   * the full ones whose overflow is push_back, each up to its timeout, that
   * rejects busy (13 / 409) when one stays full (Delivery.admit).
   */
  admit(item: ItemRef, signal?: AbortSignal): Promise<void> | undefined {
    let waits: Promise<void>[] | undefined;
    for (const n of this.all.values()) {
      // the cheap check first: most notifiers never hold a call
      if (!n.enabled || n.problem || !n.delivery.holding) continue;
      if (!n.config.events.some((s) => (s.subject === 'state' || s.subject === 'action') && itemSelected(s, item))) continue;
      const wait = n.delivery.admit(n.timeout, signal);
      if (wait) (waits ??= []).push(wait);
    }
    if (!waits) return undefined;
    // one busy answer is enough; the other waits end by themselves (counted as busy too)
    for (const w of waits) w.catch(() => undefined);
    return Promise.all(waits).then(() => undefined);
  }

  /** A bus event: into the queue of every enabled notifier subscribed to it (router.ts: the cost follows those). */
  onEvent(subject: Subject, data: unknown): void {
    this.router.route(subject, data);
  }

  /**
   * A `server` event (3.3: `restart` as the controller stops, or on
   * notify_restart) to every enabled notifier subscribed to `server`; it
   * queues like any event, so a stop's drain delivers it.
   */
  notifyServer(event: string): void {
    if (this.routes.some((r) => r.events.some((s) => s.subject === 'server'))) this.log.warning(`sending server ${event} event`);
    this.router.route('server', event);
  }

  /**
   * `[cluster] failover`: while this controller is a standby its notifiers
   * take no event and start no endpoint (one controller name, one
   * publisher); once it is active they start, and mqtt notifiers get the
   * state of every item they publish (retained where their states are), so
   * subscribers and retained topics hold the new active one's states.
   */
  follow(failover: { role: 'active' | 'standby'; onRole(l: (role: 'active' | 'standby') => void): void }): void {
    this.paused = failover.role !== 'active';
    failover.onRole((role) => this.setActive(role === 'active'));
  }

  private setActive(active: boolean): void {
    if (this.paused === !active) return;
    this.paused = !active;
    if (!active) {
      this.log.warning('standby: notifiers take no events and close their connections until this controller is active again');
      for (const n of this.all.values()) this.standBy(n);
      return;
    }
    this.log.info('active: notifiers take events');
    for (const n of this.deferred) if (n.enabled && !n.problem && !n.endpoint) this.startEndpoint(n, !n.config.skip_test);
    this.deferred.clear();
    const items = this.ctx.hasService('items') ? this.ctx.service('items') : undefined;
    if (!items) return;
    for (const n of this.all.values()) {
      const sub = n.config.events.find((x) => x.subject === 'state');
      if (n.config.type !== 'mqtt' || !sub || !n.enabled || n.problem) continue;
      for (const it of items.list()) {
        if (!itemSelected(sub, it)) continue;
        const st = items.state(it.oid);
        if (st) n.delivery.push('state', st);
      }
    }
  }

  /**
   * Demoted: the notifier sends nothing more (its queue, and a durable one's
   * outbox, wait for it to be active again) and its endpoint stops, closing
   * its connections; a new one starts when this controller is active again.
   */
  private standBy(n: Managed): void {
    const endpoint = n.endpoint;
    if (!endpoint || n.stopped) return;
    n.delivery.park();
    n.endpoint = undefined;
    this.deferred.add(n);
    void withDeadline(n.timeout, async () => endpoint.stop()).catch((err: unknown) => this.log.error(`notifier ${n.config.id}: stop: ${describe(err)}`));
  }

  registerType(ctx: PluginContext, type: NotifierType): void {
    const names = [type.name, ...(type.aliases ?? [])];
    for (const name of names) {
      if (this.types.has(name)) throw new Error(`notifier type ${name} is already registered`);
    }
    const factory = endpointFactory(type, ctx);
    for (const name of names) this.types.set(name, type);
    ctx.onStop(() => this.detach(type));
    for (const n of this.all.values()) if (!n.type && names.includes(n.config.type)) this.attach(n, type, ctx, factory);
  }

  private attach(n: Managed, type: NotifierType, ctx: PluginContext, factory: EndpointFactory): void {
    n.type = type;
    n.typeCtx = ctx;
    n.factory = factory;
    n.config.type = type.name; // an alias (http-json) is read as the type itself
    if (type.maxBatch && n.config.max_batch === undefined && !this.ctx.config.raw.notifiers?.max_batch) {
      n.delivery.setMaxBatch(type.maxBatch);
    }
    const wrong = configProblem(type, n.config);
    if (wrong) {
      this.refuse(n, `bad ${type.name} config: ${wrong}`);
      return;
    }
    const durable = type.durable?.(n.config) === true;
    n.delivery.setOverflow(overflowOf(n.config, durable));
    if (durable) this.durable(n);
    if (n.enabled) this.startEndpoint(n, !n.config.skip_test);
  }

  /**
   * A durable notifier keeps its outbox and dead letters in runtime/outbox/.
   * A controller directory that cannot be written (a read-only image) keeps
   * them in memory, as every notifier did before, and says so.
   */
  private durable(n: Managed): void {
    const dir = outboxDir(this.ctx.paths.runtime);
    const id = n.config.id;
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.accessSync(dir, fs.constants.W_OK);
    } catch (err) {
      this.log.warning(`notifier ${id}: ${dir} is not writable (${describe(err)}): its queue is kept in memory only`);
      return;
    }
    const maxAge = typeof n.config.outbox_max_age === 'number' ? n.config.outbox_max_age : OUTBOX_MAX_AGE;
    try {
      n.delivery.useOutbox({ outbox: path.join(dir, id), deadLetters: path.join(dir, `${id}.dead.json`), maxAge, redeliver: n.config.redeliver_dead === true, writes: this.ctx.writes });
    } catch (err) {
      this.log.error(`notifier ${id}: outbox not usable (${describe(err)}): its queue is kept in memory only`);
    }
  }

  private refuse(n: Managed, problem: string): void {
    n.problem = problem;
    n.delivery.cancel();
    this.log.error(`notifier ${n.config.id} is not usable: ${problem}`);
  }

  /** Create and start the endpoint, then the worker; the start-up test (when asked) runs first, in the worker. */
  private startEndpoint(n: Managed, test: boolean): void {
    if (this.paused) {
      this.deferred.add(n);
      return;
    }
    const cfg = n.config;
    let endpoint: Endpoint;
    try {
      endpoint = this.create(n);
    } catch (err) {
      this.refuse(n, `cannot create: ${describe(err)}`);
      return;
    }
    n.endpoint = endpoint;
    n.test = cfg.skip_test ? 'skipped' : 'not run';
    n.delivery.run(endpoint, async () => {
      try {
        await endpoint.start?.();
      } catch (err) {
        this.log.error(`notifier ${cfg.id} (${cfg.type}) failed to start: ${describe(err)}`);
      }
      if (!test) return;
      try {
        await withDeadline(n.timeout, (signal) => endpoint.test(signal));
        n.test = 'passed';
        this.log.info(`notifier ${cfg.id} (${cfg.type}) test passed`);
      } catch (err) {
        // as the old system: the notifier stays active, it may come up later
        n.test = 'failed';
        this.log.error(`notifier ${cfg.id} (${cfg.type}) test failed: ${describe(err)}`);
      }
    });
  }

  private create(n: Managed): Endpoint {
    return n.factory!.create(n.config, { ctx: n.typeCtx!, log: this.ctx.quietLog(`notifier.${n.config.id}`) });
  }

  /**
   * test_notifier: the endpoint test now, on the host's clock (the
   * notifier's timeout). A notifier with no endpoint running (disabled) is
   * tested through one of its own, which acts on nothing it receives and is
   * stopped after. False when the id is unknown; rejects with the reason in
   * words (the config's secrets hidden) when the test fails.
   */
  async test(id: string): Promise<boolean> {
    const n = this.all.get(id);
    if (!n) return false;
    if (n.problem) throw functionFailed(`notifier ${id} cannot run: ${n.problem}`);
    if (!n.type) throw functionFailed(`notifier type ${n.config.type} is not available`);
    const type = n.type;
    const running = n.endpoint;
    let endpoint: Endpoint;
    try {
      endpoint = running ?? this.create(n);
    } catch (err) {
      throw functionFailed(`notifier ${id}: cannot create: ${hideSecrets(type, n.config, describe(err))}`);
    }
    if (!running) endpoint.setEnabled?.(false);
    try {
      await withDeadline(n.timeout, (signal) => endpoint.test(signal));
      n.test = 'passed';
      // the receiver answers (redeliver_dead): its dead letters go out again, while the notifier runs
      if (running && n.enabled) n.delivery.redeliver('test passed');
      return true;
    } catch (err) {
      n.test = 'failed';
      throw functionFailed(`notifier ${id} test failed: ${hideSecrets(type, n.config, describe(err))}`);
    } finally {
      if (!running) await withDeadline(n.timeout, async () => endpoint.stop()).catch(() => undefined);
    }
  }

  /** list_dead_letters, replay_dead_letters, drop_dead_letters: undefined when the id is unknown; throws when it keeps none. */
  deadLetters(id: string) {
    const n = this.all.get(id);
    if (!n) return undefined;
    const letters = n.delivery.letters();
    if (!letters) throw functionFailed(`notifier ${id} keeps no dead letters (it is not durable)`);
    return {
      list: (filter: LetterFilter, offset?: number, limit?: number) => letters.list(filter, offset, limit),
      replay: (filter: LetterFilter) => n.delivery.replay(filter),
      drop: async (filter: LetterFilter) => (await letters.take(filter)).length,
    };
  }

  /** After every plugin started: a notifier whose type never registered is reported once. */
  ready(): void {
    for (const n of this.all.values()) {
      if (!n.type && !n.problem) this.refuse(n, `notifier type ${n.config.type} is not available`);
    }
  }

  /** The type's plugin stops: deliver what is queued (bounded by stop_drain), then stop the endpoints. */
  private async detach(type: NotifierType): Promise<void> {
    for (const [name, t] of this.types) if (t === type) this.types.delete(name);
    const mine = [...this.all.values()].filter((n) => n.type === type);
    await Promise.all(mine.map((n) => this.stopOne(n)));
  }

  /**
   * Deliver what is queued, then stop the endpoint, all within stop_drain:
   * the endpoint's stop gets what the drain left (it is called even when
   * nothing is left, and not waited for then). Once per notifier.
   */
  private stopOne(n: Managed): Promise<void> {
    n.stopped ??= (async () => {
      const until = Date.now() + n.delivery.stopDrain * 1000;
      await n.delivery.stop();
      const endpoint = n.endpoint;
      n.endpoint = undefined;
      n.type = undefined;
      if (!endpoint) return;
      try {
        await withDeadline(Math.max(0, until - Date.now()) / 1000, async () => endpoint.stop());
      } catch (err) {
        this.log.error(`notifier ${n.config.id}: stop: ${describe(err)}`);
      }
    })();
    return n.stopped;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.all.values()].map((n) => this.stopOne(n)));
  }

  get(id: string) {
    const n = this.all.get(id);
    return n && { config: n.config, endpoint: n.endpoint, enabled: n.enabled };
  }

  defaultOf(type: string): string | undefined {
    return this.list().find((id) => {
      const n = this.all.get(id)!;
      return n.enabled && !n.problem && n.config.type === type;
    });
  }

  list(): string[] {
    return [...this.all.keys()].sort();
  }

  settings(): NotifierFileSettings {
    const types: NotifierFileSettings['types'] = {};
    // a type is listed under its name, not again under each alias
    for (const t of new Set(this.types.values())) types[t.name] = { description: t.description, aliases: t.aliases, settings: declsData(t.settings) };
    const common = Object.fromEntries(Object.entries(CommonSettings).map(([k, st]) => [k, settingData(st)]));
    return { fields: FileFields, common, types };
  }

  /** A notifier's state (health.ts). */
  private stateOf(id: string, n: Managed): NotifierHealth {
    let connection: { up: boolean; downSince?: number; error?: string } | undefined;
    try { connection = n.endpoint?.connection?.(); } catch (err) { connection = { up: false, error: describe(err) }; }
    return stateOf({ id, type: n.config.type, enabled: n.enabled, problem: n.problem, connection, failure: n.delivery.failure, load: n.delivery.load });
  }

  /** The part of /health that is the notifiers': each one's state; a bad one makes the controller degraded. */
  health(): { state?: NotifierHealth[]; degraded: string[] } {
    const all = [...this.all].sort(([a], [b]) => a.localeCompare(b)).map(([id, n]) => this.stateOf(id, n));
    // a controller without notifiers has no such part
    return { state: all.length ? all.map(publicState) : undefined, degraded: all.filter(isBad).map(degradedLine) };
  }

  describe(id: string, stats = false): Record<string, unknown> | undefined {
    const n = this.all.get(id);
    if (!n) return undefined;
    const cfg = n.config;
    const out: Record<string, unknown> = { id, type: cfg.type, enabled: n.enabled, events: cfg.events };
    // the optional common fields as the file has them (enabled is the run-time state, set above)
    for (const f of Object.keys(CommonSettings)) {
      if (f !== 'enabled' && cfg[f] !== undefined) out[f] = cfg[f];
    }
    if (n.type) Object.assign(out, serializeSettings(n.type, cfg));
    if (n.problem) out.problem = n.problem;
    if (stats) {
      let extra: Record<string, unknown> = {};
      try { extra = n.endpoint?.info?.() ?? {}; } catch (err) { extra = { info_error: describe(err) }; }
      const { state, since, error, warning } = this.stateOf(id, n);
      out.stats = {
        ...extra, ...n.delivery.stats(), ...(n.resend ? { interval_rounds: n.resend.figures.rounds, interval_skipped: n.resend.figures.skipped } : {}),
        test: n.test, state, since: since ?? null, last_error: error ?? extra.last_error ?? (n.delivery.failure.error || null), ...(warning ? { warning } : {}),
      };
    }
    return out;
  }

  async setEnabled(id: string, enabled: boolean): Promise<boolean> {
    const n = this.all.get(id);
    if (!n) return false;
    if (!enabled) {
      n.enabled = false;
      n.delivery.cancel(); // what waits for a disabled notifier is dropped, and counted
      n.endpoint?.setEnabled?.(false);
      return true;
    }
    if (n.problem) throw functionFailed(`notifier ${id} cannot run: ${n.problem}`);
    if (!n.type) throw functionFailed(`notifier type ${n.config.type} is not available`);
    if (!n.endpoint) {
      this.startEndpoint(n, false);
      if (n.problem) throw functionFailed(`notifier ${id} cannot run: ${n.problem}`);
    }
    n.enabled = true;
    n.endpoint?.setEnabled?.(true);
    return true;
  }
}
