import type * as Ws from 'ws';
import type { WebSocketServer, WebSocket, RawData } from 'ws';
import { onFirstUse } from '../../core/lazy';
import { definePlugin, type PluginContext } from '../../core/plugin';
import { Subjects, type Subject } from '../../core/bus';
import { authenticate } from '../../core/auth/authenticate';
import { ApiError, accessDenied, invalidParams } from '../../core/errors';
import { Defaults } from '../../core/defaults';
import { normalizeSubscriptions } from '../notifiers/host/config';
import { StreamClient } from './client';
import { CloseCodes, type StreamService, type StreamStats } from './api';
import { streamMetrics } from './metrics';

/** Where the stream is taken (README, "Event stream"). */
export const StreamPath = '/ws';
/** The WebSocket library, loaded with the first stream client: a controller nobody streams from never loads it. */
const wsLib = onFirstUse<typeof Ws>('ws');
/** Largest message a client may send (auth, subscribe): they are small. */
const MAX_INCOMING = 64 * 1024;

/**
 * Plugin `stream`: the event stream, a WebSocket on the API's own HTTP
 * server at /ws. A client authenticates in its first message, subscribes
 * with notifier filters, and receives the state, action and log events its
 * key may see (service `stream` reports the figures).
 */
export const plugin = definePlugin({
  name: 'stream',
  kind: 'service',
  version: '1.0.0',
  provides: ['stream'],
  needs: ['items'],
  start(ctx) {
    startStream(ctx);
  },
});

/** The stream's bounds from [webapi]; zero or less keeps the default (a zero ping interval would spin). */
function bounds(w: typeof Defaults.webapi) {
  const positive = (k: 'ws_max_buffer' | 'ws_ping_interval' | 'ws_auth_timeout') => (w[k] > 0 ? w[k] : Defaults.webapi[k]);
  return {
    ws_max_clients: Math.max(0, w.ws_max_clients),
    ws_max_buffer: positive('ws_max_buffer'),
    ws_ping_interval: positive('ws_ping_interval'),
    ws_auth_timeout: positive('ws_auth_timeout'),
  };
}

function startStream(ctx: PluginContext): void {
  const w = bounds(ctx.config.webapi);
  const log = ctx.quietLog(); // its own records must not feed the stream they report on
  const items = ctx.service('items');
  let wss: WebSocketServer | undefined;
  const clients = new Set<StreamClient>();
  const stats: StreamStats = { clients: 0, accepted: 0, refused: 0, dropped_slow: 0, dropped_dead: 0, sent: 0 };

  /** Send unless the client's buffer would pass ws_max_buffer: then it is told and disconnected. */
  const send = (c: StreamClient, text: string): void => {
    if (c.closing || c.ws.readyState !== c.ws.OPEN) return;
    if (c.ws.bufferedAmount + text.length > w.ws_max_buffer) {
      stats.dropped_slow++;
      log.warning(`stream client ${c.ip} (key ${c.auth?.key.id}) too slow: send buffer full, disconnected`);
      goodbye(c, CloseCodes.too_slow, 'too slow: send buffer full');
      return;
    }
    c.ws.send(text);
    stats.sent++;
  };

  const reply = (c: StreamClient, msg: Record<string, unknown>) => send(c, JSON.stringify(msg));
  const error = (c: StreamClient, err: unknown) => {
    const e = err instanceof ApiError ? err : invalidParams((err as Error)?.message ?? String(err));
    reply(c, { s: 'error', code: e.code, message: e.message });
  };

  /**
   * Tell the client why (after what it has waiting) and close. Nothing more
   * is queued for it; one that does not read even that is cut by the next
   * ping rounds.
   */
  function goodbye(c: StreamClient, code: number, reason: string): void {
    if (c.closing) return;
    c.closing = true;
    c.ws.send(JSON.stringify({ s: 'error', code: code === CloseCodes.unauthorized ? 2 : 13, message: reason }));
    c.ws.close(code, reason);
  }

  const onMessage = (c: StreamClient, data: RawData, binary: boolean): void => {
    if (c.closing) return;
    let msg: Record<string, unknown>;
    try {
      if (binary) throw new Error('messages are JSON text');
      msg = JSON.parse(String(data)) as Record<string, unknown>;
      if (!msg || typeof msg !== 'object' || Array.isArray(msg)) throw new Error('a message is a JSON object');
    } catch (err) {
      error(c, invalidParams((err as Error).message));
      return;
    }
    if (!c.auth) {
      try {
        if (msg.m !== 'auth' || typeof msg.k !== 'string' || !msg.k) throw accessDenied('the first message must be {"m": "auth", "k": key or token}');
        const found = authenticate(ctx.keys, msg.k, c.ip);
        if (!found) throw accessDenied('invalid key');
        c.auth = found;
        reply(c, { s: 'auth', key: found.key.id, ...(found.user === undefined ? {} : { user: found.user }) });
      } catch (err) {
        goodbye(c, CloseCodes.unauthorized, err instanceof ApiError ? err.message : 'access denied');
      }
      return;
    }
    if (msg.m !== 'subscribe') {
      error(c, invalidParams(`unknown message m: ${String(msg.m)} (expected subscribe)`));
      return;
    }
    try {
      c.subs = normalizeSubscriptions(msg.events);
    } catch (err) {
      error(c, err);
      return;
    }
    reply(c, { s: 'subscribed', events: c.subs });
    // the current state of the items it may see, before any change of them
    if (c.subs.some((s) => s.subject === 'state')) {
      const now = items.list().map((i) => items.state(i.oid)).filter((e) => e && c.wants('state', e));
      reply(c, { s: 'state', d: now });
    }
  };

  const accept = (ws: WebSocket, ip: string): void => {
    const c = new StreamClient(ws, ip);
    clients.add(c);
    stats.accepted++;
    const authTimer = setTimeout(() => { if (!c.auth) goodbye(c, CloseCodes.unauthorized, 'no authentication in time'); }, w.ws_auth_timeout * 1000);
    ws.on('message', (data, binary) => onMessage(c, data, binary));
    ws.on('pong', () => { c.alive = true; });
    ws.on('error', (err) => log.debug(`stream client ${ip}: ${err.message}`));
    ws.once('close', () => {
      clearTimeout(authTimer);
      clients.delete(c);
    });
  };

  ctx.httpUpgrade(StreamPath, {
    upgrade(req, socket, head, ip) {
      if (clients.size >= w.ws_max_clients) {
        stats.refused++;
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      wss ??= new (wsLib().WebSocketServer)({ noServer: true, maxPayload: MAX_INCOMING });
      wss.handleUpgrade(req, socket, head, (client) => accept(client, ip));
    },
    close: () => closeAll(),
  });

  for (const subject of Subjects) {
    ctx.on(subject, (event: unknown, subj: Subject) => {
      let text: string | undefined; // one serialization for every client
      for (const c of clients) {
        if (!c.wants(subj, event)) continue;
        text ??= JSON.stringify({ s: subj, d: [event] });
        send(c, text);
      }
    });
  }

  // pings find dead peers; the same round ends clients whose key or token is gone
  ctx.interval(() => {
    for (const c of clients) {
      if (!c.alive) {
        if (!c.closing) stats.dropped_dead++;
        clients.delete(c);
        c.ws.terminate();
        continue;
      }
      c.alive = false;
      if (c.ws.readyState !== c.ws.OPEN) continue; // closing: cut at the next round unless gone by then
      if (c.auth && !stillValid(c)) {
        goodbye(c, CloseCodes.unauthorized, c.auth.token ? 'token expired' : 'key removed');
        continue;
      }
      c.ws.ping();
    }
  }, w.ws_ping_interval * 1000);

  const stillValid = (c: StreamClient): boolean => {
    const a = c.auth!;
    if (a.token) return ctx.keys.resolve(a.token)?.key === a.key;
    return a.assigned ? true : ctx.keys.get(a.key.id) === a.key;
  };

  function closeAll(): void {
    for (const c of clients) {
      c.closing = true;
      c.ws.close(1001, 'server stopping');
    }
  }
  ctx.onStop(() => {
    closeAll();
    for (const c of clients) c.ws.terminate();
    clients.clear();
    wss?.close();
  });

  const service: StreamService = { stats: () => ({ ...stats, clients: clients.size }) };
  ctx.provide('stream', service);
  ctx.metrics(() => streamMetrics(service.stats()));
}
