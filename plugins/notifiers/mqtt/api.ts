import type { Dispatcher } from '../../../core/dispatch';
import type { ModuleLogger } from '../../../core/log';
import { describe } from '../../../core/log';
import { rpcCall, rpcError, type RpcResponse } from '../../../core/rpc';
import { ErrorKinds } from '../../../core/errors';
import type { Connection } from './connection';
import { MqttDefaults, type MqttSettings } from './settings';
import { Topics } from './topics';

const OWNER = 'api';

/** A request id that can be a topic level: no separators, wildcards or NUL, not too long. */
const TOPIC_SAFE_ID = /^[^/#+\0]{1,128}$/;

/**
 * api_enabled: JSON RPC 2.0 over MQTT. A request (or a batch) published to
 * SPACE/controller/<product>/<system>/api/request is run through the kernel
 * dispatcher like an HTTP call — authenticated by `k`, from an address
 * nobody knows (so only keys allowed from every network pass) — and each
 * answer goes to .../api/response/<request id>. Notifications get no answer.
 * We subscribe only to requests, so our own answers never come back to us.
 */
export class MqttApi {
  private pending = 0;
  readonly stats = { requests: 0, refused: 0, dropped: 0 };

  constructor(
    private readonly conn: Connection,
    private readonly s: MqttSettings,
    private readonly dispatcher: Dispatcher,
    private readonly self: { system: string; product: string },
    private readonly log: ModuleLogger,
    private readonly maxPending = MqttDefaults.api_max_pending,
  ) {}

  get requestTopic(): string {
    return Topics.apiRequest(this.s.prefix, this.self.product, this.self.system);
  }

  start(): void {
    this.conn.routes.add(OWNER, this.requestTopic, this.s.qos.system, (_t, payload) => this.onRequest(payload));
  }

  stop(): void {
    this.conn.routes.remove(OWNER);
  }

  /** A request that gets no answer. Its text is never logged: it may carry a key. */
  private drop(why: string, bytes: number): void {
    this.stats.dropped++;
    this.log.warning(`mqtt ${this.s.id}: API request of ${bytes} bytes dropped: ${why}`);
  }

  private onRequest(payload: Buffer): void {
    if (payload.length > MqttDefaults.api_max_request) return this.drop(`larger than ${MqttDefaults.api_max_request} bytes`, payload.length);
    let req: unknown;
    try { req = JSON.parse(payload.toString('utf8')); } catch { return this.drop('not JSON', payload.length); }
    const reqs = Array.isArray(req) ? req : [req];
    for (const r of reqs) this.one(r, payload.length);
  }

  private one(req: unknown, bytes: number): void {
    const id = req && typeof req === 'object' ? (req as Record<string, unknown>).id : undefined;
    const answerable = (typeof id === 'string' || typeof id === 'number') && TOPIC_SAFE_ID.test(String(id));
    if (id !== undefined && id !== null && !answerable) return this.drop('the id cannot be a topic level', bytes);
    this.stats.requests++;
    if (this.pending >= this.maxPending) {
      // bounded: a flood of requests must not pile up calls; the caller may retry
      this.stats.refused++;
      if (answerable) this.answer(String(id), rpcError(id, ErrorKinds.busy.code, `too many MQTT API requests under way (${this.maxPending})`));
      else this.drop('too many requests under way', bytes);
      return;
    }
    this.pending++;
    rpcCall(this.dispatcher, req, { ip: 'mqtt', transport: 'mqtt', headers: {} })
      .then((res) => {
        if (!res) return;
        if (answerable) this.answer(String(id), res);
        else this.drop(res.error?.message ?? 'no id to answer to', bytes);
      })
      .catch((err) => this.log.error(`mqtt ${this.s.id}: API request failed: ${describe(err)}`))
      .finally(() => { this.pending--; });
  }

  private answer(id: string, res: RpcResponse): void {
    const topic = Topics.apiResponse(this.s.prefix, this.self.product, this.self.system, id);
    this.conn.publish(topic, JSON.stringify(res), this.s.qos.system).catch((err) => {
      this.log.warning(`mqtt ${this.s.id}: API answer to ${id} not sent: ${describe(err)}`);
    });
  }
}
