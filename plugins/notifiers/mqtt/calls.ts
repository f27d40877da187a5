import crypto from 'node:crypto';
import path from 'node:path';
import type { PluginContext } from '../../../core/plugin';
import type { KeyStore } from '../../../core/auth/keys';
import type { ModuleLogger } from '../../../core/log';
import { describe } from '../../../core/log';
import { RepeatLog } from '../../../core/repeat-log';
import { rpcCall, rpcError, type RpcResponse } from '../../../core/rpc';
import { ErrorKinds } from '../../../core/errors';
import { packed, unpacked } from '../../../core/http/encode';
import type { Connection } from './connection';
import { MqttDefaults, type MqttSettings } from './settings';
import { Topics } from './topics';
import {
  BadFrame, binaryKey, fernetDecrypt, fernetEncrypt, fernetKey, open, seal, splitBinary, splitText,
} from './frames';
import { ReplayGuard } from './replay';
import type { SeenIdsFiles } from './seen-ids';

const OWNER = 'api';

/** A request id that can be a topic level: no separators, wildcards or NUL, not too long. */
const TOPIC_SAFE_ID = /^[^/#+\0]{1,128}$/;

/** The answer prefix of a binary frame: 0x00, then HTTP status 200. */
const BINARY_OK = Buffer.from([0x00, 0xc8]);

const sameSecret = (a: string, b: string) =>
  crypto.timingSafeEqual(crypto.createHash('sha256').update(a).digest(), crypto.createHash('sha256').update(b).digest());

/**
 * api_enabled: the MQTT API of 3.3 controllers. Requests come to
 * SPACE/controller/<product>/<system>/api/request as encrypted frames
 * (./frames.ts: binary, as 3.3's LM and SFA send them, or text), the key
 * named by its id and never sent; the JSON RPC inside runs through the
 * kernel dispatcher as that key, from an address nobody knows (so only
 * keys allowed from every network pass). The answer, encrypted the same
 * way, goes to .../api/response/<request id>. A frame that does not
 * authenticate, or is a replay, is dropped and counted, never answered.
 * Plain JSON RPC (the key in clear text) only with api_plain_json.
 * We subscribe only to requests, so our own answers never come back to us.
 */
export class MqttApi {
  private pending = 0;
  /** in memory until start, which opens the controller's ids on disk */
  private replay = new ReplayGuard(MqttDefaults.api_replay_ids, MqttDefaults.api_token_window);
  readonly stats = { requests: 0, refused: 0, dropped: 0, bad_frames: 0, replays: 0, unrecorded: 0 };
  /** dropped requests in the log: whoever can publish to the broker must not grow it (one line per interval) */
  private dropLog?: RepeatLog;

  constructor(
    private readonly conn: Connection,
    private readonly s: MqttSettings,
    private readonly dispatcher: Pick<PluginContext, 'call' | 'paths' | 'config'>,
    private readonly keys: KeyStore,
    private readonly self: { system: string; product: string },
    /** the controller's stores of frames already run */
    private readonly seen: SeenIdsFiles,
    private readonly log: ModuleLogger,
    private readonly maxPending = MqttDefaults.api_max_pending,
  ) {}

  get requestTopic(): string {
    return Topics.apiRequest(this.s.prefix, this.self.product, this.self.system);
  }

  /** The file of the frames already run, one per controller (every mqtt notifier guards the same API). */
  get seenFile(): string {
    return path.join(this.dispatcher.paths.runtime, `${this.self.product}_mqtt_api_seen.json`);
  }

  start(): void {
    const ids = this.seen.acquire(this.seenFile, MqttDefaults.api_replay_ids, this.log);
    this.replay = new ReplayGuard(MqttDefaults.api_replay_ids, MqttDefaults.api_token_window, ids);
    this.conn.routes.add(OWNER, this.requestTopic, this.s.qos.system, (_t, payload) => this.onRequest(payload));
  }

  stop(): void {
    this.dropLog?.flush();
    this.conn.routes.remove(OWNER);
    this.seen.release(this.replay.ids).catch((err) => this.log.error(`mqtt ${this.s.id}: ${this.seenFile}: ${describe(err)}`));
  }

  /** A request that gets no answer. Its text is never logged: it may carry a key. */
  private drop(why: string, _bytes: number): void {
    this.stats.dropped++;
    (this.dropLog ??= new RepeatLog(this.log, () => this.dispatcher.config.server.log_repeat_interval))
      .note(`mqtt ${this.s.id}: API requests dropped: ${why}`);
  }

  private onRequest(payload: Buffer): void {
    if (payload.length > MqttDefaults.api_max_request) return this.drop(`larger than ${MqttDefaults.api_max_request} bytes`, payload.length);
    try {
      if (payload[0] === 0x00) return this.binary(payload);
      if (payload[0] === 0x7c /* | */) return this.text(payload.toString('utf8'));
    } catch (err) {
      if (!(err instanceof BadFrame)) throw err;
      this.stats.bad_frames++;
      return this.drop('an encrypted frame that does not authenticate', payload.length);
    }
    if (!this.s.apiPlainJson) return this.drop('plain JSON RPC is off (api_plain_json)', payload.length);
    let req: unknown;
    try { req = JSON.parse(payload.toString('utf8')); } catch { return this.drop('not JSON', payload.length); }
    const reqs = Array.isArray(req) ? req : [req];
    for (const r of reqs) this.plain(r, payload.length);
  }

  /** The key a frame names; an unknown id is a frame that does not authenticate. */
  private keyValue(id: string): string {
    const key = this.keys.get(id);
    if (!key) throw new BadFrame('unknown key id');
    return key.key;
  }

  private binary(frame: Buffer): void {
    const { keyId, sealed } = splitBinary(frame);
    const keyValue = this.keyValue(keyId);
    const key = binaryKey(keyValue);
    const plain = open(key, sealed);
    if (plain.length < 16) throw new BadFrame('no request id');
    const rid = plain.subarray(0, 16).toString('hex');
    if (!this.replay.fresh(`b ${keyId} ${rid}`)) return this.replayed(frame.length);
    let req: unknown;
    // /jrpc's MessagePack: 64-bit integers as bigints, timestamps kept to the nanosecond and written back as they came
    try { req = unpacked(plain.subarray(16)); } catch { return this.drop('not MessagePack', frame.length); }
    this.answer(rid, this.once(frame.length, () => this.run(req, keyValue)), (res) => Buffer.concat([BINARY_OK, seal(key, packed(res))]));
  }

  private text(frame: string): void {
    const { keyId, token } = splitText(frame);
    const keyValue = this.keyValue(keyId);
    const key = fernetKey(keyValue);
    const { plain, time, mac } = fernetDecrypt(key, token);
    if (!this.replay.inWindow(time) || !this.replay.fresh(`t ${mac.toString('hex')}`)) return this.replayed(frame.length);
    const text = plain.toString('utf8');
    const bar = text.indexOf('|');
    const callId = text.slice(0, bar);
    if (bar < 0 || !TOPIC_SAFE_ID.test(callId)) return this.drop('the call id cannot be a topic level', frame.length);
    let req: unknown;
    try { req = JSON.parse(text.slice(bar + 1)); } catch { return this.drop('not JSON', frame.length); }
    this.answer(callId, this.once(frame.length, () => this.run(req, keyValue)), (res) => `200|${fernetEncrypt(key, Buffer.from(JSON.stringify(res)))}`);
  }

  /**
   * Run a frame once its id is on disk, so it never runs again, not even
   * after a restart; a frame whose id cannot be written is not run.
   */
  private once(bytes: number, run: () => Promise<unknown>): Promise<unknown> {
    return this.replay.written().then(run, () => {
      this.stats.unrecorded++;
      this.drop('its id could not be recorded against replays', bytes);
      return undefined;
    });
  }

  /** Send the encrypted answer of a frame, when there is one (a notification has none). */
  private answer(id: string, res: Promise<unknown>, frame: (res: unknown) => string | Buffer): void {
    res.then((r) => { if (r !== undefined) this.send(id, frame(r)); })
      .catch((err) => this.log.error(`mqtt ${this.s.id}: API answer to ${id} not made: ${describe(err)}`));
  }

  private replayed(bytes: number): void {
    this.stats.replays++;
    this.drop('a replayed or stale encrypted frame', bytes);
  }

  /** The request (or batch) of an encrypted frame, made as the frame's key: a `k` inside must be that key. */
  private async run(req: unknown, keyValue: string): Promise<unknown> {
    const one = (r: unknown): Promise<RpcResponse | undefined> => {
      const o = r && typeof r === 'object' && !Array.isArray(r) ? r as Record<string, unknown> : undefined;
      const params = o?.params && typeof o.params === 'object' && !Array.isArray(o.params) ? { ...o.params as Record<string, unknown> } : undefined;
      if (params && params.k !== undefined) {
        if (typeof params.k !== 'string' || !sameSecret(params.k, keyValue)) {
          return Promise.resolve(rpcError(o!.id ?? null, ErrorKinds.access_denied.code, 'k is not the key of the frame'));
        }
        delete params.k;
      }
      return this.call(params ? { ...o, params } : r, keyValue);
    };
    if (!Array.isArray(req)) return one(req);
    const answers = (await Promise.all(req.map(one))).filter((a) => a !== undefined);
    return answers.length ? answers : undefined;
  }

  /** One JSON RPC request through the dispatcher, within the bound of requests under way. */
  private async call(req: unknown, headerKey?: string): Promise<RpcResponse | undefined> {
    this.stats.requests++;
    if (this.pending >= this.maxPending) {
      // bounded: a flood of requests must not pile up calls; the caller may retry
      this.stats.refused++;
      const id = (req as Record<string, unknown> | null)?.id;
      return rpcError(id ?? null, ErrorKinds.busy.code, `too many MQTT API requests under way (${this.maxPending})`);
    }
    this.pending++;
    try {
      return await rpcCall(this.dispatcher, req, { ip: 'mqtt', transport: 'mqtt', headers: {}, headerKey });
    } catch (err) {
      this.log.error(`mqtt ${this.s.id}: API request failed: ${describe(err)}`);
      return undefined;
    } finally {
      this.pending--;
    }
  }

  /** A plain JSON RPC request (api_plain_json): answered by its own id. */
  private plain(req: unknown, bytes: number): void {
    const id = req && typeof req === 'object' ? (req as Record<string, unknown>).id : undefined;
    const answerable = (typeof id === 'string' || typeof id === 'number') && TOPIC_SAFE_ID.test(String(id));
    if (id !== undefined && id !== null && !answerable) return this.drop('the id cannot be a topic level', bytes);
    void this.call(req).then((res) => {
      if (!res) return;
      if (answerable) this.send(String(id), JSON.stringify(res));
      else this.drop(res.error?.message ?? 'no id to answer to', bytes);
    });
  }

  private send(id: string, payload: string | Buffer): void {
    const topic = Topics.apiResponse(this.s.prefix, this.self.product, this.self.system, id);
    this.conn.publish(topic, payload, this.s.qos.system).catch((err) => {
      this.log.warning(`mqtt ${this.s.id}: API answer to ${id} not sent: ${describe(err)}`);
    });
  }
}
