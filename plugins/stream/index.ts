import type * as Ws from 'ws';
import type { WebSocketServer, WebSocket, RawData } from 'ws';
import { onFirstUse } from '../../core/toolkit/lazy-module';
import { definePlugin, type PluginContext } from '../../core/plugin';
import { Subjects, type BusSubject } from '../../core/bus';
import { RepeatLog } from '../../core/repeat-log';
import { ApiError, accessDenied, invalidParams } from '../../core/errors';
import { Defaults } from '../../core/defaults';
import { bound } from '../../core/schema';
import { normalizeSubscriptions } from '../notifiers/contract';
import { StreamClient } from './client';
import type { ResolvedKey } from '../../core/auth/keys';
import { CloseCodes, type StreamService, type StreamStats } from './contract';
import { streamMetrics } from './metrics';
import { EventRing } from './ring';
import { SeqSource, epochFile, epochOf } from './seq';

/** Where the stream is taken (plugins/stream/README.md). */
export const StreamPath = '/ws';
/** The WebSocket library, loaded with the first stream client: a controller nobody streams from never loads it. */
const wsLib = onFirstUse<typeof Ws>('ws');
/** Largest message a client may send (auth, subscribe): they are small. */
const MAX_INCOMING = 64 * 1024;
/** Messages kept while a client's auth message is checked (a subscribe sent right after it); more close it. */
const MAX_EARLY = 4;

/** The ring of events kept for clients that resume (`[webapi]`; plugins/stream/README.md, "Resuming"). */
export const StreamSettings = {
  ws_replay_events: bound(100_000, 'events the event stream keeps for clients that resume (subscribe with since); past it the oldest go'),
  ws_replay_bytes: bound(32 * 1024 * 1024,
    'the same in bytes (each event: its frame\'s characters + 48); whichever bound is reached first drops the oldest', 'bytes'),
};

/** `since` of a subscribe: absent (or null) for none, else a seq; anything else is refused in words. */
function sinceOf(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  const shown = typeof v === 'string' ? `"${v.slice(0, 40)}"` : String(JSON.stringify(v)).slice(0, 40);
  throw invalidParams(`since must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER} (the seq of the last event received), not ${shown}`);
}

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
  settings: { webapi: StreamSettings },
  start(ctx) {
    startStream(ctx);
  },
});

/** The stream's bounds from [webapi]; zero or less keeps the default (a zero ping interval would spin). */
function bounds(w: typeof Defaults.webapi) {
  const positive = (k: 'ws_max_buffer' | 'ws_ping_interval' | 'ws_auth_timeout' | 'ws_max_unauthenticated' | 'ws_max_unauthenticated_per_address') =>
    (w[k] > 0 ? w[k] : Defaults.webapi[k]);
  return {
    ws_max_clients: Math.max(0, w.ws_max_clients),
    ws_max_unauthenticated: positive('ws_max_unauthenticated'),
    ws_max_unauthenticated_per_address: positive('ws_max_unauthenticated_per_address'),
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
  /**
   * Connections not yet authenticated, oldest first: a pool of their own
   * (ws_max_unauthenticated, and per address), so keyless connections never
   * take the places of authenticated clients (ws_max_clients counts only
   * those). At a bound the oldest makes room: a client that authenticates
   * promptly gets in however many others connect and say nothing.
   */
  const unauthenticated = new Set<StreamClient>();
  let authenticated = 0;
  const stats: StreamStats = {
    clients: 0, unauthenticated: 0, accepted: 0, refused: 0, evicted: 0, dropped_slow: 0, dropped_dead: 0, sent: 0,
    replaying: 0, replayed: 0, gaps: 0, ring_events: 0, ring_bytes: 0, ring_dropped: 0,
  };
  // every event numbered, and kept for clients that resume (seq.ts says why the numbers never repeat)
  const seqs = new SeqSource(epochFile(ctx.paths), log);
  const replay = ctx.config.section('webapi', StreamSettings);
  const ring = new EventRing(replay.ws_replay_events, replay.ws_replay_bytes, seqs.last);
  /** the ring keeps events once a client has subscribed (below) */
  let keeping = false;
  /** refused messages (bad auth, malformed, unknown) in the log: one line per interval */
  const refusals = new RepeatLog(log, () => ctx.config.server.log_repeat_interval);

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
    if (c.authing) {
      if (c.early.length >= MAX_EARLY) goodbye(c, CloseCodes.unauthorized, 'too many messages before the authentication answer');
      else c.early.push({ data, binary });
      return;
    }
    let msg: Record<string, unknown>;
    try {
      if (binary) throw new Error('messages are JSON text');
      msg = JSON.parse(String(data)) as Record<string, unknown>;
      if (!msg || typeof msg !== 'object' || Array.isArray(msg)) throw new Error('a message is a JSON object');
    } catch (err) {
      refusals.note('stream messages refused: not a JSON object', c.ip);
      error(c, invalidParams((err as Error).message));
      return;
    }
    if (!c.auth) {
      if (msg.m !== 'auth' || typeof msg.k !== 'string' || !msg.k) {
        refusals.note('stream connections closed: the first message was no auth', c.ip);
        goodbye(c, CloseCodes.unauthorized, 'the first message must be {"m": "auth", "k": key or token}');
        return;
      }
      const k = msg.k;
      c.authing = true;
      // the kernel's check: throttled with every other transport's, a wrong key's answer held back
      ctx.authenticate(k, c.ip).then((found) => {
        if (!found) throw accessDenied('invalid key');
        authenticated1(c, found, k);
      }).catch((err: unknown) => {
        goodbye(c, CloseCodes.unauthorized, err instanceof ApiError ? err.message : 'access denied');
      });
      return;
    }
    if (msg.m !== 'subscribe') {
      refusals.note('stream messages refused: unknown m', c.ip);
      error(c, invalidParams(`unknown message m: ${String(msg.m)} (expected subscribe)`));
      return;
    }
    let since: number | undefined;
    try {
      since = sinceOf(msg.since);
      // a number of this run not given yet is the client's mistake; one of another run only means it missed events
      if (since !== undefined && since > seqs.last && epochOf(since) === seqs.current) {
        throw invalidParams(`since ${since} is ahead of this stream: its last seq is ${seqs.last}`);
      }
      c.subs = normalizeSubscriptions(msg.events);
    } catch (err) {
      error(c, err);
      return;
    }
    keeping = true;
    c.gen++; // a replay under way for the old subscription stops
    const resume = since !== undefined && since >= ring.floor && since <= ring.last;
    c.cursor = resume ? since! : ring.last;
    reply(c, { s: 'subscribed', events: c.subs, seq: c.cursor });
    if (resume) {
      c.replaying = true;
      pump(c, c.gen);
      return;
    }
    c.replaying = false;
    if (since !== undefined) gap(c, since);
    snapshot(c);
  };

  /** The current state of the items it may see, before any change of them (at the last seq given). */
  function snapshot(c: StreamClient): void {
    if (!c.subs.some((s) => s.subject === 'state')) return;
    const now = items.list().map((i) => items.state(i.oid)).filter((e) => e && c.wants('state', e));
    reply(c, { s: 'state', d: now, seq: ring.last });
  }

  /** The events after `since` are no longer kept (or are of another run): the client is told, then gets the state. */
  function gap(c: StreamClient, since: number): void {
    stats.gaps++;
    reply(c, { s: 'gap', since, first: ring.floor + 1, seq: ring.last, message: `the events after ${since} are no longer kept: the current state follows` });
  }

  /**
   * Send a resuming client the kept events after its cursor that it wants,
   * in order, keeping at most half of ws_max_buffer waiting (a replay never
   * closes it as too slow): at that mark it goes on when the frame is
   * written out. Live events pass it by meanwhile (they are in the ring,
   * the pump gets to them); at the ring's end it is live, with no event
   * between (both run on the one thread). One that fell behind the ring's
   * oldest gets a gap and the state.
   */
  function pump(c: StreamClient, gen: number): void {
    const mark = w.ws_max_buffer / 2;
    while (gen === c.gen && !c.closing && c.ws.readyState === c.ws.OPEN) {
      if (c.cursor >= ring.last) {
        c.replaying = false;
        return;
      }
      if (c.cursor < ring.floor) {
        const since = c.cursor;
        c.cursor = ring.last;
        c.replaying = false;
        gap(c, since);
        snapshot(c);
        return;
      }
      const e = ring.at(++c.cursor)!;
      if (!c.wants(e.subject, (JSON.parse(e.text) as { d: unknown[] }).d[0])) continue;
      stats.sent++;
      stats.replayed++;
      if (c.ws.bufferedAmount + e.text.length >= mark) {
        c.ws.send(e.text, () => pump(c, gen));
        return;
      }
      c.ws.send(e.text);
    }
  }

  /** A client whose key or token passed: it leaves the pool of unauthenticated ones, if there is room. */
  function authenticated1(c: StreamClient, found: ResolvedKey, presented: string): void {
    c.authing = false;
    if (c.closing || !clients.has(c)) return; // closed, gone or made room meanwhile
    if (authenticated >= w.ws_max_clients) {
      unauthenticated.delete(c);
      goodbye(c, CloseCodes.try_again, `too many clients (${w.ws_max_clients}), retry later`);
      return;
    }
    unauthenticated.delete(c);
    authenticated++;
    c.auth = found;
    c.presented = presented;
    reply(c, { s: 'auth', key: found.key.id, ...(found.user === undefined ? {} : { user: found.user }) });
    for (const m of c.early.splice(0)) onMessage(c, m.data, m.binary);
  }

  /** Room in the unauthenticated pool for a newcomer from `from`: its address's oldest, else the oldest of all, is closed. */
  function makeRoom(from: string): void {
    let oldest: StreamClient | undefined;
    let mine = 0;
    for (const c of unauthenticated) {
      if (c.from !== from) continue;
      oldest ??= c;
      mine++;
    }
    if (mine < w.ws_max_unauthenticated_per_address) oldest = unauthenticated.size >= w.ws_max_unauthenticated ? unauthenticated.values().next().value : undefined;
    if (!oldest) return;
    unauthenticated.delete(oldest);
    stats.evicted++;
    refusals.note('stream connections closed before authenticating: room made for newer ones', oldest.ip);
    goodbye(oldest, CloseCodes.try_again, 'too many connections waiting to authenticate');
  }

  /**
   * A new connection. Without a key yet it joins the unauthenticated pool
   * (making room there); one whose key came with the upgrade (`found`) never
   * does, so no keyless connection can push it out.
   */
  const accept = (ws: WebSocket, ip: string, found?: ResolvedKey, presented?: string): void => {
    const c = new StreamClient(ws, ip);
    clients.add(c);
    stats.accepted++;
    if (found) {
      authenticated1(c, found, presented!);
    } else {
      makeRoom(c.from);
      unauthenticated.add(c);
    }
    const authTimer = setTimeout(() => { if (!c.auth) goodbye(c, CloseCodes.unauthorized, 'no authentication in time'); }, w.ws_auth_timeout * 1000);
    ws.on('message', (data, binary) => onMessage(c, data, binary));
    ws.on('pong', () => { c.alive = true; });
    ws.on('error', (err) => log.debug(`stream client ${ip}: ${err.message}`));
    ws.once('close', () => {
      clearTimeout(authTimer);
      forget(c);
    });
  };

  /** A client gone (closed, cut, or dropped at a ping round): its place is free. */
  function forget(c: StreamClient): void {
    if (!clients.delete(c)) return;
    if (!unauthenticated.delete(c) && c.auth) authenticated--;
  }

  ctx.httpUpgrade(StreamPath, {
    upgrade(req, socket, head, ip) {
      const full = () => {
        // only authenticated clients count here: keyless connections have their own pool
        if (authenticated < w.ws_max_clients) return false;
        stats.refused++;
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return true;
      };
      if (full()) return;
      const upgrade = (found?: ResolvedKey, k?: string) => {
        wss ??= new (wsLib().WebSocketServer)({ noServer: true, maxPayload: MAX_INCOMING });
        wss.handleUpgrade(req, socket, head, (client) => accept(client, ip, found, k));
      };
      const k = req.headers['x-auth-key'];
      if (typeof k !== 'string' || !k) {
        upgrade();
        return;
      }
      // the key with the upgrade: checked (and throttled) as the auth message's, before any WebSocket is made
      ctx.authenticate(k, ip).then((found) => {
        if (!found) throw accessDenied('invalid key');
        if (!full()) upgrade(found, k);
      }).catch((err: unknown) => {
        refusals.note('stream upgrades refused: wrong X-Auth-Key', ip);
        const why = err instanceof ApiError ? err.message : 'access denied';
        socket.end(`HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(why)}\r\n\r\n${why}`);
      });
    },
    close: () => closeAll(),
  });

  for (const subject of Subjects) {
    ctx.on(subject, (event: unknown, subj: BusSubject) => {
      // until a client first subscribes no number of this run was given, so none can be resumed from: the
      // event is numbered, not serialized nor kept (a gateway with no stream client pays nothing for the ring)
      if (!keeping) {
        seqs.next();
        ring.skip();
        return;
      }
      // one serialization for the ring and every client
      const text = JSON.stringify({ s: subj, d: [event], seq: seqs.next() });
      ring.push(subj, text);
      for (const c of clients) {
        if (c.replaying || !c.wants(subj, event)) continue; // a replaying client gets it from the ring, in its turn
        send(c, text);
      }
    });
  }

  // pings find dead peers; the same round ends clients whose key or token is gone. The round runs after the I/O
  // waiting in the loop (setImmediate), so pongs that came while this process was busy are read before anyone is
  // judged; and a round that itself comes more than an interval late (this process stalled: a GC, a long call, a
  // starved machine) drops no one, it pings again: a peer is dead when it missed a pong it had time to send.
  const every = w.ws_ping_interval * 1000;
  let lastRound = Date.now();
  let round: NodeJS.Immediate | undefined;
  ctx.interval(() => { round ??= setImmediate(pingRound); }, every);
  function pingRound(): void {
    round = undefined;
    const now = Date.now();
    const stalled = now - lastRound > 2 * every;
    lastRound = now;
    for (const c of clients) {
      if (!c.alive && !stalled) {
        if (!c.closing) stats.dropped_dead++;
        forget(c);
        c.ws.terminate();
        continue;
      }
      c.alive = false;
      if (c.ws.readyState !== c.ws.OPEN) continue; // closing: cut at the next round unless gone by then
      if (c.auth && !stillValid(c)) {
        revoke(c);
        continue;
      }
      c.ws.ping();
    }
  }

  /**
   * Does the client's key or token still let it in from its address? The
   * value is resolved again (regenerate_key and set_key_prop key change the
   * key object in place, so comparing objects is not enough), and
   * hosts_allow asked again. A token's check counts as its use.
   */
  const stillValid = (c: StreamClient): boolean => {
    const found = c.presented === undefined ? undefined : ctx.keys.resolve(c.presented);
    return !!found && found.key === c.auth!.key && found.key.hostsAllow.has(c.ip);
  };
  const revoke = (c: StreamClient): void =>
    goodbye(c, CloseCodes.unauthorized, c.auth!.key.expired() ? `API key expired at ${c.auth!.key.expiresIso()}`
      : c.auth!.token ? 'token ended (expired, logged out, or its key changed)' : 'key removed or changed, or not allowed from this address');

  // a key changed or removed, a token ended: check every client at once (once per burst of changes)
  let recheck: NodeJS.Immediate | undefined;
  const stopListening = ctx.keys.onRevoke(() => {
    recheck ??= setImmediate(() => {
      recheck = undefined;
      for (const c of clients) if (c.auth && !c.closing && !stillValid(c)) revoke(c);
    });
  });

  function closeAll(): void {
    for (const c of clients) {
      c.closing = true;
      c.ws.close(1001, 'server stopping');
    }
  }
  ctx.onStop(() => {
    stopListening();
    if (recheck) clearImmediate(recheck);
    if (round) clearImmediate(round);
    refusals.flush();
    closeAll();
    for (const c of clients) c.ws.terminate();
    clients.clear();
    wss?.close();
  });

  const service: StreamService = {
    stats: () => ({
      ...stats, clients: clients.size, unauthenticated: unauthenticated.size, replaying: [...clients].filter((c) => c.replaying).length,
      ring_events: ring.count, ring_bytes: ring.bytes, ring_dropped: ring.dropped,
    }),
  };
  ctx.provide('stream', service);
  ctx.metrics(() => streamMetrics(service.stats()));
}
