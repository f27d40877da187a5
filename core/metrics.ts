import { injectable } from 'tsyringe';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { Config } from './config';
import type { ResolvedKey } from './auth/keys';
import { permits, type Permission } from './functions';
import { accessDenied } from './errors';
import { Logger, describe, type ModuleLogger } from './log';

/**
 * One figure a plugin offers GET /metrics. Its family is `eva_<name>`; the
 * samples of one name share help, type and label names.
 */
export interface MetricSample {
  name: string;
  help: string;
  /** gauge when absent; a counter only grows (name it *_total) */
  type?: 'gauge' | 'counter';
  labels?: Record<string, string>;
  value: number;
}

/** A plugin's figures, read at every scrape (PluginContext.metrics). */
export type MetricSource = () => Iterable<MetricSample>;

/** The call result label of a call that succeeded; failures carry their error kind. */
export const CALL_OK = 'ok';
/** The function label of a call to a function that does not exist: client input never becomes a label. */
export const UNKNOWN_FUNCTION = '-';

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const ACCESS: Permission[] = ['none', 'any', 'sysfunc', 'master'];

let processRegistry: Registry | undefined;
/**
 * Process figures (memory, event-loop lag, descriptors, GC) belong to the
 * process, not to one controller: one registry for the process, made on first
 * use (a test process holds many controllers; prom-client's collectors each
 * install a monitor that is never removed).
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

interface CallFigures { latency: { observe(v: number): void }; results: Map<string, { inc(): void }> }

/**
 * The controller's figures for GET /metrics: API calls and their latency
 * (counted by the dispatcher), the memory log, the process, and whatever
 * plugins offer (the notifier host: each notifier's delivery and endpoint
 * figures). The kernel knows no plugin's figures by name.
 */
@injectable()
export class Metrics {
  private readonly registry = new Registry();
  private readonly calls: Counter<'function' | 'result'>;
  private readonly latency: Histogram<'function'>;
  /** label children per function, made once: a call costs one increment and one observation */
  private readonly perFunction = new Map<string, CallFigures>();
  private readonly sources = new Map<string, MetricSource[]>();
  private readonly log: ModuleLogger;
  /** source problems already logged: each once, not once per scrape */
  private readonly told = new Set<string>();
  readonly contentType = this.registry.contentType;

  constructor(private readonly config: Config, logger: Logger) {
    this.log = logger.module('metrics');
    processMetrics();
    const registers = [this.registry];
    this.calls = new Counter({
      name: 'eva_api_calls_total', help: 'API calls by function and result (ok or the error kind)',
      labelNames: ['function', 'result'], registers,
    });
    this.latency = new Histogram({
      name: 'eva_api_call_duration_seconds', help: 'API call time from dispatch to result, by function',
      labelNames: ['function'], buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10], registers,
    });
    new Gauge({
      name: 'eva_log_memory_records', help: 'records held in the memory log', registers,
      collect() { this.set(logger.memSize().records); },
    });
    new Gauge({
      name: 'eva_log_memory_bytes', help: 'about how many bytes the memory log holds', registers,
      collect() { this.set(logger.memSize().bytes); },
    });
  }

  /** One API call ended (the dispatcher, for every transport). */
  call(fn: string, result: string, seconds: number): void {
    let f = this.perFunction.get(fn);
    if (!f) {
      f = { latency: this.latency.labels(fn), results: new Map() };
      this.perFunction.set(fn, f);
    }
    let r = f.results.get(result);
    if (!r) {
      r = this.calls.labels(fn, result);
      f.results.set(result, r);
    }
    r.inc();
    f.latency.observe(seconds);
  }

  addSource(owner: string, source: MetricSource): void {
    const list = this.sources.get(owner) ?? [];
    list.push(source);
    this.sources.set(owner, list);
  }

  removeOwner(owner: string): void {
    this.sources.delete(owner);
  }

  /**
   * May this caller (identified by the dispatcher, so wrong keys are
   * throttled as on any call) read the figures? Throws access_denied.
   */
  check(who: ResolvedKey | undefined): void {
    const wanted = this.config.webapi.metrics_access;
    // a misspelt setting falls back to the default, never to an open door
    const access: Permission = ACCESS.includes(wanted) ? wanted : 'sysfunc';
    if (!permits(who?.key, access)) throw accessDenied();
  }

  /** The exposition text. */
  async text(): Promise<string> {
    const fromPlugins = new Registry();
    this.collectSources(fromPlugins);
    return Registry.merge([processMetrics(), this.registry, fromPlugins]).metrics();
  }

  /** The plugins' samples as families of a registry made for this scrape (families come and go with notifiers). */
  private collectSources(into: Registry): void {
    const taken = new Set([...processMetrics().getMetricsAsArray(), ...this.registry.getMetricsAsArray()].map((m) => m.name));
    const families = new Map<string, { owner: string; type: 'gauge' | 'counter'; help: string; samples: MetricSample[] }>();
    for (const [owner, list] of this.sources) {
      for (const source of list) {
        let samples: MetricSample[];
        try {
          samples = [...source()];
        } catch (err) {
          this.tell(`${owner}: figures not read: ${describe(err)}`);
          continue;
        }
        for (const s of samples) {
          const name = `eva_${s.name}`;
          const type = s.type ?? 'gauge';
          const fam = families.get(name);
          if (!NAME.test(name) || taken.has(name) || !Number.isFinite(s.value) || (fam && (fam.owner !== owner || fam.type !== type))) {
            this.tell(`${owner}: figure ${s.name} skipped (bad or taken name, mixed type, or not a number)`);
            continue;
          }
          if (fam) fam.samples.push(s);
          else families.set(name, { owner, type, help: s.help, samples: [s] });
        }
      }
    }
    for (const [name, fam] of families) {
      const labelNames = [...new Set(fam.samples.flatMap((s) => Object.keys(s.labels ?? {})))];
      if (!labelNames.every((l) => NAME.test(l) && !l.startsWith('__'))) {
        this.tell(`${fam.owner}: figure ${name} skipped (bad label name)`);
        continue;
      }
      if (fam.type === 'counter') {
        const c = new Counter({ name, help: fam.help, labelNames, registers: [into] });
        for (const s of fam.samples) c.inc(s.labels ?? {}, Math.max(0, s.value));
      } else {
        const g = new Gauge({ name, help: fam.help, labelNames, registers: [into] });
        for (const s of fam.samples) g.set(s.labels ?? {}, s.value);
      }
    }
  }

  private tell(problem: string): void {
    if (this.told.has(problem) || this.told.size >= 100) return;
    this.told.add(problem);
    this.log.warning(problem);
  }
}
