import WebSocket from 'ws';
import type { ExecutionContext } from 'ava';
import { startController, Keys, type DirOptions } from './controller';
import { keysIni } from './keys';
import { until } from './wait';
import { Logger } from '../../core/log';

/** A stream client for tests: the ws package's own client, with its messages queued for `next`. */
export class TestStream {
  readonly ws: WebSocket;
  readonly messages: any[] = [];
  private waiters: (() => void)[] = [];
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;

  /** `headers`: sent with the upgrade (X-Real-IP, for a controller with x_real_ip). */
  constructor(t: ExecutionContext, url: string, headers: Record<string, string> = {}) {
    this.ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws', { headers });
    t.teardown(() => this.ws.terminate());
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      this.ws.once('error', reject);
    });
    this.closed = new Promise((resolve) => this.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    this.ws.on('message', (data) => {
      this.messages.push(JSON.parse(data.toString()));
      for (const w of this.waiters.splice(0)) w();
    });
    this.ws.on('close', () => { for (const w of this.waiters.splice(0)) w(); });
  }

  send(msg: unknown): void {
    this.ws.send(JSON.stringify(msg));
  }

  /** The first queued message that passes `pred` (removed from the queue), waiting up to ms. */
  async next(pred: (m: any) => boolean = () => true, ms = 10_000): Promise<any> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.messages.findIndex(pred);
      if (i >= 0) return this.messages.splice(i, 1)[0];
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`closed; queued: ${JSON.stringify(this.messages).slice(0, 500)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no such message in ${ms} ms; queued: ${JSON.stringify(this.messages).slice(0, 500)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  /** Connect, authenticate with a key or token and subscribe; returns the auth answer. */
  static async open(t: ExecutionContext, url: string, k: string, events?: unknown[], headers: Record<string, string> = {}): Promise<TestStream> {
    const s = new TestStream(t, url, headers);
    await s.opened;
    s.send({ m: 'auth', k });
    const a = await s.next();
    if (a.s !== 'auth') throw new Error(`auth refused: ${JSON.stringify(a)}`);
    if (events) {
      s.send({ m: 'subscribe', events });
      await s.next((m) => m.s === 'subscribed');
    }
    return s;
  }
}

/**
 * A controller with the stream probe, a small send buffer, and two clients
 * subscribed to the log: `slow`, paused (it reads nothing), and `fast`.
 * `flood(total)` logs `flood <n> <1000 x>` records, 500 at a time, each
 * batch as soon as `fast` has the previous one: as fast as a reader takes
 * them, more than socket buffers hold, so `slow` is closed with 4008.
 */
export async function slowAndFast(t: ExecutionContext) {
  const r = await startStreamController(t, { webapi: { ws_max_buffer: 256 * 1024, ws_ping_interval: 600 } });
  const sub = [{ subject: 'log', level: 'info' }];
  const slow = await TestStream.open(t, r.url, Keys.master, sub);
  const fast = await TestStream.open(t, r.url, Keys.master, sub);
  slow.ws.pause();
  const log = r.ctl.get(Logger).module('flood');
  const pad = 'x'.repeat(1000);
  let got = 0;
  fast.ws.on('message', () => { got++; });
  const flood = async (total: number) => {
    for (let i = 0; i < total; i += 500) {
      for (let j = i; j < i + 500; j++) log.info(`flood ${j} ${pad}`);
      await until('the reader to catch up', () => got >= i + 500, 30_000);
    }
    return got;
  };
  return { ...r, sub, slow, fast, flood };
}

/** A drop-in plugin that exposes the stream's figures as function stream_stats. */
export const STATS_PLUGIN = `
module.exports.plugin = {
  name: 'streamprobe', kind: 'service', version: '1.0.0', needs: ['stream'],
  start(ctx) {
    ctx.register({ name: 'stream_stats', permission: 'master', description: 'stream figures', params: {},
      handler: () => ctx.service('stream').stats() });
  },
};
`;

/** Keys of the stream tests: the master and one limited to group home and below, both from `from`. */
export const HOME = 'homehomehomehomehomehomehomehomehomehomehomehomehomehomehome1234';
export function streamKeysIni(from = '127.0.0.1'): string {
  return keysIni({
    masterkey: { key: Keys.master, master: true, hosts_allow: from },
    home: { key: HOME, groups: 'home/#', hosts_allow: from },
  });
}
export const ALL = [{ subject: 'state', types: ['#'], groups: ['#'] }, { subject: 'action', types: ['#'], groups: ['#'] }, { subject: 'log', level: 20 }];

/** A controller with the stream probe and three items: sensor:home/t1, sensor:other/t2, lvar:home/l1. */
export async function startStreamController(t: ExecutionContext, webapi: DirOptions['ini'] = {}, keys = streamKeysIni()) {
  const r = await startController(t, { keysIni: keys, ini: webapi, files: { 'plugins/streamprobe.js': STATS_PLUGIN } });
  for (const i of ['sensor:home/t1', 'sensor:other/t2', 'lvar:home/l1']) await r.client.ok('create', { i, k: Keys.master });
  return r;
}
