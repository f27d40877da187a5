import { injectable } from 'tsyringe';
import type * as PromClient from 'prom-client';
import type { Metric, MetricValueWithName, Registry } from 'prom-client';
import { onFirstUse } from './toolkit/lazy-module';
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

/**
 * prom-client only writes the exposition text: the calls are counted as plain
 * numbers. It is loaded at the first scrape (about 2.5 MB of a controller's
 * idle memory that never serves /metrics; test/bench/README.md, Footprint).
 */
const prom = onFirstUse<typeof PromClient>('prom-client');

/** The exposition format's media type (prom-client's, stated here so that a reply need not load it). */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** prom-client's default gauges whose names say counter: left out of /metrics. */
const MISNAMED_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

let processRegistry: Registry | undefined;
/**
 * Process figures (memory, event-loop lag, descriptors, GC) belong to the
 * process, not to one controller: one registry for the process, made at the
 * first scrape (a test process holds many controllers; prom-client's
 * collectors each install a monitor that is never removed). The GC and
 * event-loop figures therefore count from the first scrape on.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new (prom().Registry)();
    prom().collectDefaultMetrics({ register: processRegistry });
    processCpu(processRegistry);
    // gauges named like counters (promtool: no _total on a non-counter); each
    // is the sum of its per-type gauge (nodejs_active_handles{type=...} ...)
    for (const name of MISNAMED_GAUGES) processRegistry.removeSingleMetric(name);
  }
  return processRegistry;
}

/**
 * The process's CPU time from its start, as the exposition format means
 * `process_cpu_seconds_total` (node_exporter and the Go and Python clients
 * count so): prom-client's collector counts from its own creation, the
 * first scrape, and would show a controller that worked an hour before it
 * as idle. process.cpuUsage() is the total since the process started.
 */
function processCpu(registry: Registry): void {
  const seconds = (part: (u: NodeJS.CpuUsage) => number) => () => [{ labels: {}, value: part(process.cpuUsage()) / 1e6 }];
  const figures: [string, string, (u: NodeJS.CpuUsage) => number][] = [
    ['process_cpu_user_seconds_total', 'Total user CPU time spent in seconds, since the process started.', (u) => u.user],
    ['process_cpu_system_seconds_total', 'Total system CPU time spent in seconds, since the process started.', (u) => u.system],
    ['process_cpu_seconds_total', 'Total user and system CPU time spent in seconds, since the process started.', (u) => u.user + u.system],
  ];
  for (const [name, help, part] of figures) {
    registry.removeSingleMetric(name);
    family(name, help, 'counter', seconds(part), registry);
  }
}

/** The upper bounds (seconds) of the call latency histogram's buckets. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/**
 * One function's call figures as plain numbers: a call costs a few
 * additions, not an update of prom-client's labelled children; prom-client
 * writes the exposition text at scrape time.
 */
interface CallFigures { results: Map<string, number>; buckets: number[]; sum: number; count: number }

type Values = MetricValueWithName<string>[];

/** A metric family of a registry whose samples `values` reads at scrape time. */
function family(name: string, help: string, type: 'counter' | 'histogram', values: () => Values, registry: Registry): void {
  const get = () => ({ name, help, type, aggregator: 'sum', values: values() });
  registry.registerMetric({ name, help, type, aggregator: 'sum', get, reset() {}, labels() {} } as unknown as Metric);
}

/**
 * The controller's figures for GET /metrics: API calls and their latency
 * (counted by the dispatcher), the memory log, the process, and whatever
 * plugins offer (the notifier host: each notifier's delivery and endpoint
 * figures). The kernel knows no plugin's figures by name.
 */
@injectable()
export class Metrics {
  /** the controller's own families, made at the first scrape */
  private ownRegistry: Registry | undefined;
  /** per function name (declared ones and UNKNOWN_FUNCTION: bounded by the registry) */
  private readonly perFunction = new Map<string, CallFigures>();
  private readonly sources = new Map<string, MetricSource[]>();
  private readonly log: ModuleLogger;
  /** source problems already logged: each once, not once per scrape */
  private readonly told = new Set<string>();
  readonly contentType = METRICS_CONTENT_TYPE;

  constructor(private readonly config: Config, private readonly logger: Logger) {
    this.log = logger.module('metrics');
  }

  /** The controller's own families (calls, latency, memory log), read at each scrape. */
  private get registry(): Registry {
    if (this.ownRegistry) return this.ownRegistry;
    const { Gauge, Registry: PromRegistry } = prom();
    const registry = (this.ownRegistry = new PromRegistry());
    const registers = [registry];
    const logger = this.logger;
    family('eva_api_calls_total', 'API calls by function and result (ok or the error kind)', 'counter', () => {
      const out: Values = [];
      for (const [fn, f] of this.perFunction) for (const [result, n] of f.results) out.push({ labels: { function: fn, result }, value: n });
      return out;
    }, registry);
    const latency = 'eva_api_call_duration_seconds';
    family(latency, 'API call time from dispatch to result, by function', 'histogram', () => {
      const out: Values = [];
      for (const [fn, f] of this.perFunction) {
        let below = 0;
        LATENCY_BUCKETS.forEach((le, i) => out.push({ metricName: `${latency}_bucket`, labels: { le, function: fn }, value: (below += f.buckets[i]) }));
        out.push({ metricName: `${latency}_bucket`, labels: { le: '+Inf', function: fn }, value: f.count });
        out.push({ metricName: `${latency}_sum`, labels: { function: fn }, value: f.sum });
        out.push({ metricName: `${latency}_count`, labels: { function: fn }, value: f.count });
      }
      return out;
    }, registry);
    new Gauge({
      name: 'eva_log_memory_records', help: 'records held in the memory log', registers,
      collect() { this.set(logger.memSize().records); },
    });
    new Gauge({
      name: 'eva_log_memory_bytes', help: 'about how many bytes the memory log holds', registers,
      collect() { this.set(logger.memSize().bytes); },
    });
    return registry;
  }

  /** One API call ended (the dispatcher, for every transport). */
  call(fn: string, result: string, seconds: number): void {
    let f = this.perFunction.get(fn);
    if (!f) this.perFunction.set(fn, (f = { results: new Map(), buckets: LATENCY_BUCKETS.map(() => 0), sum: 0, count: 0 }));
    f.results.set(result, (f.results.get(result) ?? 0) + 1);
    // the first bucket whose bound holds the time; past the last only +Inf (the count) holds it
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]) i++;
    if (i < LATENCY_BUCKETS.length) f.buckets[i]++;
    f.sum += seconds;
    f.count++;
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
    const { Registry: PromRegistry } = prom();
    const fromPlugins = new PromRegistry();
    this.collectSources(fromPlugins);
    return PromRegistry.merge([processMetrics(), this.registry, fromPlugins]).metrics();
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
    const { Counter, Gauge } = prom();
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
