import type { DeliveryError, Endpoint, EndpointEnv, NotifierConfig, NotifierType } from '../contract';
import { historyService, notifierPlugin } from '../type-plugin';
import { checkHttpUri, HiddenPassword, shownUri } from '../contract';
import { InfluxClient } from './client';
import { InfluxDefaults, InfluxHistory, WriteFailure } from './history';
import { infiniteValue, measurementOf, testLine, unwritable, type InfluxPoint } from './lines';
import { bool, text } from '../../../core/schema';

/**
 * Notifier type `influxdb` (EVA ICS 3.3's InfluxDB_Notifier): states into
 * an InfluxDB 1.x database over its HTTP API, batched (the host's batches,
 * retries and bounds), and the history API (state_history, state_log with
 * `a=<id>`) answered from it with InfluxQL as 3.3 answered.
 */

/** Most states in one send: InfluxDB takes thousands of lines a request well. */
const MAX_BATCH = 5000;

function checkDb(db: unknown): string {
  if (typeof db !== 'string' || !db) throw new Error('db (the database name) is missing');
  return db;
}

/** A state event as a point; undefined for anything that cannot be one. */
function toPoint(space: string, e: unknown): InfluxPoint | undefined {
  if (!e || typeof e !== 'object') return undefined;
  const { t, oid, status, value } = e as Record<string, unknown>;
  if (typeof oid !== 'string' || typeof status !== 'number') return undefined;
  const p: InfluxPoint = {
    measurement: measurementOf(space, oid), status,
    value: value === undefined || value === null ? null : String(value),
    t: typeof t === 'number' ? t : NaN,
  };
  return unwritable(p) ? undefined : p;
}

class InfluxEndpoint implements Endpoint {
  readonly history: InfluxHistory;
  private readonly client: InfluxClient;
  private ignored = 0;
  /** values beyond a float's range, written without their value field */
  private infinite = 0;

  constructor(private readonly cfg: NotifierConfig, private readonly env: EndpointEnv) {
    this.client = new InfluxClient({
      uri: String(cfg.uri), db: String(cfg.db),
      username: typeof cfg.username === 'string' ? cfg.username : undefined,
      password: typeof cfg.password === 'string' ? cfg.password : undefined,
      verify: cfg.ssl_verify !== false,
    });
    const timeout = typeof cfg.timeout === 'number' && cfg.timeout > 0 ? cfg.timeout : InfluxDefaults.query_timeout;
    this.history = new InfluxHistory(this.client, cfg.space ?? '', timeout, env.log, cfg.id);
  }

  stop(): Promise<void> {
    return this.history.stop();
  }

  /** 3.3's test: a point `<space>:eva_test test="passed"` written; the server must take it. */
  async test(signal: AbortSignal): Promise<void> {
    const a = await this.client.post('/write', testLine(this.cfg.space ?? ''), 'application/octet-stream', InfluxDefaults.max_write_answer, signal);
    if (a.status < 200 || a.status > 299) throw new Error(`influxdb answered HTTP ${a.status}: ${InfluxClient.errorOf(a)}`);
  }

  async send(subject: string, events: unknown[], signal: AbortSignal): Promise<void> {
    if (subject !== 'state') return; // 3.3 wrote states only
    const space = this.cfg.space ?? '';
    const points = events.map((e) => {
      const p = toPoint(space, e);
      if (!p) this.ignored++;
      else if (infiniteValue(p.value)) this.noteInfinite(p);
      return p;
    });
    try {
      await this.history.writePoints(points, signal);
    } catch (err) {
      if (!(err instanceof WriteFailure)) throw err;
      const e: DeliveryError = new Error(err.message);
      e.remaining = err.remaining.map((i) => events[i]);
      throw e;
    }
  }

  /** Counted; said in the log the first time only (a sensor stuck there would flood it). */
  private noteInfinite(p: InfluxPoint): void {
    if (this.infinite++ === 0) {
      this.env.log.warning(`influxdb notifier ${this.cfg.id}: ${p.measurement} value ${JSON.stringify(p.value!.slice(0, 40))} is beyond a float's range: `
        + 'written without its value field (status only); get_notifier counts such values as infinite_values, this is said once');
    }
  }

  info(): Record<string, unknown> {
    return { ...this.history.info(), ignored: this.ignored, infinite_values: this.infinite };
  }
}

export const influxdbType: NotifierType = {
  name: 'influxdb',
  description: 'writes states to an InfluxDB 1.x database (measurement = oid, fields status and value); state_history and state_log read it',
  maxBatch: MAX_BATCH,
  settings: {
    uri: text('the server, http(s)://host:8086 (credentials in it are used unless username and password are set)').req(),
    db: text('the database (it must exist)').req(),
    username: text('user (basic authorization, with password)'),
    password: text('password', { secret: true }),
    ssl_verify: bool(true, 'https: check the server certificate'),
    method: text('kept and shown as EVA ICS 3.3 did; not used'),
  },
  parseProps(props) {
    // 3.3: influxdb:http(s)://uri#database
    const at = props.indexOf('#');
    if (at < 0) throw new Error('database not specified: influxdb:http(s)://host:port#database');
    const uri = props.slice(0, at);
    if (uri.split('/').length < 3) throw new Error('uri must be http(s)://host:port');
    return { uri: checkHttpUri(uri), db: checkDb(props.slice(at + 1)) };
  },
  target: (cfg) => `${shownUri(cfg.uri)}#${String(cfg.db ?? '')}`,
  validate(cfg) {
    checkHttpUri(cfg.uri);
    checkDb(cfg.db);
  },
  serialize(cfg) {
    // the fields 3.3's serialize() gave, the password hidden
    const out: Record<string, unknown> = {};
    if (cfg.method) out.method = cfg.method;
    out.db = cfg.db;
    out.uri = shownUri(cfg.uri);
    if (cfg.ssl_verify === false) out.ssl_verify = false;
    if (cfg.username) out.username = cfg.username;
    if (cfg.password) out.password = HiddenPassword;
    return out;
  },
  create: (cfg, env) => new InfluxEndpoint(cfg, env),
};

export const plugin = notifierPlugin('notifier-influxdb', influxdbType, {
  provides: ['influxdb-history'],
  start(ctx) {
    // state_history and state_log (a=<id>) read an influxdb notifier's database here
    ctx.provide('influxdb-history', historyService(ctx, (e) => (e instanceof InfluxEndpoint ? e.history : undefined)));
  },
});
