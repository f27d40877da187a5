import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { default as Koa, Context } from 'koa';
import type Router from '@koa/router';
import { injectable } from 'tsyringe';
import { Config, parseListen } from '../config';
import { whereSet } from '../settings/usability';
import { Paths } from '../paths';
import { Dispatcher } from '../dispatch';
import { Logger, ModuleLogger } from '../log';
import { normalizeIp } from '../auth/networks';
import { Metrics } from '../metrics';
import { ApiError } from '../errors';
import { Version } from '../defaults';
import { directHandler, directRoute } from './direct';
import { jrpcProcessor } from './jrpc';
import { WriteHold } from '../toolkit/group-commit';
import { clientGone } from './gone';
import { foreignOrigin } from './origin';
import type { CallMeta } from '../call';
import type { ApiSpace } from '../functions';
import { JsonHeaders, NoCacheHeaders, send, sendDirectError, type Escaped } from './reply';
import { onFirstUse } from '../toolkit/lazy-module';
import { within } from '../toolkit/time-limit';
import { rpcError } from '../rpc';
import { HttpHooks } from './hooks';
import { Health } from '../health';
import { unreadGate } from './unread';

/** /health, with or without a query: answered in every state of the controller. */
const isHealth = (url: string) => url === '/health' || url.startsWith('/health?');

/** Koa and its router: loaded with the first request that needs them (function calls and /health do not). */
const koa = onFirstUse<typeof Koa>('koa');
const koaRouter = onFirstUse<typeof Router>('@koa/router');

/**
 * The HTTP(S) front. Function calls, GET /health and an exact path a plugin
 * took (MCP's /mcp) are answered on node:http itself; Koa, loaded on first
 * use, answers the rest (GET /metrics, plugins' routes, 404). An exception
 * that escapes a handler is logged and answered 500 without details. Until
 * open() and from drain() on, every request but /health is answered 503.
 */
@injectable()
export class HttpServer {
  private readonly servers: (http.Server | https.Server)[] = [];
  private readonly log: ModuleLogger;
  private koaCallback?: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;
  /** requests not answered yet: stop lets them finish (within stop_grace) */
  private inflight = 0;
  private drained: (() => void) | undefined;
  /** answers a function call, /health or a plugin's path, then calls `done`; false: not one of them */
  private readonly hot: (req: http.IncomingMessage, res: http.ServerResponse, done: () => void) => boolean;
  /** bound addresses, after start */
  readonly bound: { host: string; port: number; tls: boolean }[] = [];
  state: 'starting' | 'serving' | 'stopping' = 'starting';
  private readonly since = performance.now();
  private draining: Promise<void> | undefined;
  /** connections handed to plugins' upgrade handlers: the server no longer tracks them, stop ends them */
  private readonly upgraded = new Set<Duplex>();
  /** runs a request now, or once its connection's unread answers are within max_unread (unread.ts) */
  private readonly gate: ReturnType<typeof unreadGate>;

  constructor(
    private readonly config: Config, private readonly paths: Paths, private readonly dispatcher: Dispatcher, logger: Logger,
    private readonly metrics: Metrics, private readonly hooks: HttpHooks, healthReports: Health, writes: WriteHold,
  ) {
    this.log = logger.module('webapi');
    const w = config.webapi;
    const health = (res: http.ServerResponse) => {
      const ok = this.state === 'serving';
      const uptime = Math.round(performance.now() - this.since) / 1000;
      // what keeps the controller from working fully (a plugin not started, an unreadable user db): still 200
      const { degraded, states } = healthReports.read();
      send(res, ok ? 200 : 503, JsonHeaders, JSON.stringify({
        ok, state: this.state, product: paths.product, version: Version, uptime, ...(degraded.length ? { degraded } : {}), ...states,
      }));
    };
    const failed = (internal: string): Escaped => (req, res, err) => {
      // the path only: a query may hold a key
      this.log.error(`${req.method} ${(req.url ?? '').split('?')[0]}: ${String((err as Error)?.stack ?? err)}`);
      if (!res.headersSent) send(res, 500, JsonHeaders, internal);
      else res.end();
    };
    const directFailed = failed(JSON.stringify({ result: 'ERROR', _error: 'internal error' }));
    const jrpc = jrpcProcessor(dispatcher, writes, { maxBody: w.max_body_size, maxBatch: w.max_batch, maxAnswer: w.max_answer_size },
      failed(JSON.stringify(rpcError(null, 10, 'internal error'))));
    const direct = directHandler(dispatcher, { maxBody: w.max_body_size, maxAnswer: w.max_answer_size }, directFailed);
    /** Where a call comes from; a page of another origin gets no hosts_assign key (foreignOrigin; x_real_ip: behind a TLS proxy). */
    const metaOf = (req: http.IncomingMessage, res: http.ServerResponse, transport: string, space?: ApiSpace): CallMeta => {
      const xkey = req.headers['x-auth-key'];
      return {
        ip: this.clientIp(req), transport, headers: req.headers, headerKey: typeof xkey === 'string' && xkey ? xkey : undefined, space,
        signal: clientGone(req, res), assign: !foreignOrigin(req, w.x_real_ip),
      };
    };
    this.gate = unreadGate(w.max_unread, w.max_waiting);
    const route = directRoute(paths.product);
    this.hot = (req, res, done) => {
      const url = req.url ?? '/';
      if (url === '/jrpc' || url.startsWith('/jrpc?')) {
        jrpc(req, res, metaOf(req, res, 'jrpc'), done);
        return true;
      }
      if ((req.method === 'GET' || req.method === 'HEAD') && isHealth(url)) {
        health(res); // node:http sends no body to HEAD, with the headers GET has
        done();
        return true;
      }
      const call = route(url);
      if (call) {
        direct(req, res, call, metaOf(req, res, 'direct', call.space), done);
        return true;
      }
      const taken = this.hooks.pathFor(url.split('?')[0]);
      if (!taken) return false;
      // run in a promise: a handler that throws is answered as one that rejects
      void Promise.resolve().then(() => taken(req, res, this.clientIp(req))).then((handled) => {
        if (!handled && !res.headersSent) sendDirectError(res, 404, 'not found');
      }, (err: unknown) => directFailed(req, res, err)).finally(done);
      return true;
    };
  }

  /** The caller's address (x_real_ip: the proxy's X-Real-IP). */
  private clientIp(req: http.IncomingMessage): string {
    const real = this.config.webapi.x_real_ip ? req.headers['x-real-ip'] : undefined;
    return normalizeIp((typeof real === 'string' && real) || req.socket.remoteAddress || '');
  }

  /** The Koa application for the requests node:http does not answer itself. */
  private buildKoa(): Koa {
    const { dispatcher, metrics } = this;
    const reply = (ctx: Context, status: number, message: string) => {
      ctx.respond = false;
      if (!ctx.res.headersSent) sendDirectError(ctx.res, status, message);
      else ctx.res.end();
    };
    const metricsHeaders = { ...NoCacheHeaders, 'Content-Type': metrics.contentType };
    const app = new (koa())();
    const router = new (koaRouter())();
    router.get('/metrics', async (ctx) => {
      const k = typeof ctx.query.k === 'string' ? ctx.query.k : ctx.get('x-auth-key') || undefined;
      try {
        metrics.check(dispatcher.identify(k, this.clientIp(ctx.req)));
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        return reply(ctx, err.status, err.message);
      }
      const text = await metrics.text();
      ctx.respond = false;
      send(ctx.res, 200, metricsHeaders, text);
    });
    app.silent = true;
    app.use(async (ctx, next) => {
      try {
        await next();
      } catch (err) {
        this.log.error(`${ctx.method} ${ctx.path}: ${String((err as Error)?.stack ?? err)}`);
        reply(ctx, 500, 'internal error');
      }
    });
    app.use(router.routes());
    app.use(async (ctx) => {
      if (ctx.respond === false) return;
      // routes plugins added (PluginContext.httpRoute) answer the rest, themselves
      for (const route of this.hooks.routesFor(ctx.path)) {
        if (await route(ctx.req, ctx.res, this.clientIp(ctx.req))) {
          ctx.respond = false;
          return;
        }
      }
      reply(ctx, 404, 'not found');
    });
    return app;
  }

  async start(): Promise<void> {
    const w = this.config.webapi;
    const cb = (req: http.IncomingMessage, res: http.ServerResponse) => {
      // a response without its socket yet: an earlier answer of the connection is still unread
      if (res.socket === null) this.gate(req, res, (answered) => serve(req, res, answered));
      else serve(req, res);
    };
    // `answered`: told once the answer is made (a request the unread gate held)
    const serve = (req: http.IncomingMessage, res: http.ServerResponse, answered?: () => void) => {
      if (this.state !== 'serving' && !isHealth(req.url ?? '/')) {
        res.writeHead(503, { ...JsonHeaders, 'Retry-After': '1', Connection: 'close' });
        res.end(JSON.stringify({ result: 'ERROR', _error: `controller is ${this.state}` }));
        answered?.();
        return;
      }
      this.inflight++;
      const end = answered ? () => { done(); answered(); } : done;
      if (!this.hot(req, res, end)) void (this.koaCallback ??= this.buildKoa().callback())(req, res).finally(end);
    };
    const done = () => {
      if (--this.inflight === 0) this.drained?.();
    };
    // node checks request timeouts every connectionsCheckingInterval (30 s by default): a quarter of request_timeout
    const checks = { connectionsCheckingInterval: Math.min(30_000, Math.max(100, (w.request_timeout * 1000) / 4)) };
    await this.listen(http.createServer(checks, cb), 'listen', false);
    if (w.ssl_listen) {
      const rel = (f: string) => path.resolve(this.paths.etc, f);
      const opts = { ...checks, cert: fs.readFileSync(rel(w.ssl_cert)), key: fs.readFileSync(rel(w.ssl_key)) };
      await this.listen(https.createServer(opts, cb), 'ssl_listen', true);
    }
  }

  private async listen(server: http.Server | https.Server, setting: 'listen' | 'ssl_listen', tls: boolean): Promise<void> {
    const listen = this.config.webapi[setting];
    const { host, port } = parseListen(listen);
    server.requestTimeout = this.config.webapi.request_timeout * 1000;
    server.headersTimeout = Math.min(server.requestTimeout, 60_000);
    try {
      await once(server.listen(port, host), 'listening');
    } catch (err) {
      // a port held by another process: a failure of this start (the supervisor tries again), not of the settings
      throw new Error(`[webapi] ${setting} = ${listen}${whereSet(this.config.doc, 'webapi', setting)}: ${(err as Error).message}`);
    }
    server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
    server.on('clientError', (_err, socket: Duplex) => {
      // answered, then closed: a client that keeps its end open would keep the descriptor
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      // a client that reads nothing: the connection ends after request_timeout anyway
      const timer = setTimeout(() => socket.destroy(), this.config.webapi.request_timeout * 1000);
      timer.unref();
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n', () => {
        clearTimeout(timer);
        socket.destroy();
      });
    });
    const addr = server.address() as AddressInfo;
    this.bound.push({ host: addr.address, port: addr.port, tls });
    this.servers.push(server);
  }

  /** An upgrade request goes to the plugin that took its path (PluginContext.httpUpgrade); else 404; 503 unless serving. */
  private upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    // node took its own error listener off the socket: a client resetting it must not end the process
    socket.on('error', () => socket.destroy());
    if (this.state !== 'serving') {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const where = new URL(req.url ?? '/', 'http://x').pathname; // never the query: it may hold a key
    const handler = this.hooks.upgradeFor(where);
    if (!handler) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.upgraded.add(socket);
    socket.once('close', () => this.upgraded.delete(socket));
    try {
      handler.upgrade(req, socket, head, this.clientIp(req));
    } catch (err) {
      this.log.error(`upgrade ${where}: ${String((err as Error)?.stack ?? err)}`);
      socket.destroy();
    }
  }

  /** The controller serves: calls are taken, /health answers 200; the log says where (only now, as before the listener came first). */
  open(): void {
    if (this.state !== 'starting') return;
    this.state = 'serving';
    for (const { host, port, tls } of this.bound) this.log.info(`listening on ${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`);
  }

  /** Take no more calls (503), and let answers in flight go out, within stop_grace. */
  drain(): Promise<void> {
    this.state = 'stopping';
    return (this.draining ??= (async () => {
      if (this.inflight > 0) await within(new Promise<void>((resolve) => { this.drained = resolve; }), this.config.webapi.stop_grace * 1000);
      // calls that outlived the grace lose their connection; the listener stays for /health
      if (this.inflight > 0) for (const s of this.servers) s.closeAllConnections();
    })());
  }

  /** Drain, stop listening and close every connection. */
  async stop(): Promise<void> {
    await this.drain();
    // upgraded connections (event streams) of plugins that have not closed theirs
    for (const h of this.hooks.upgradeHandlers()) {
      try { await h.close?.(); } catch (err) { this.log.error(`upgrade handler close: ${String((err as Error)?.stack ?? err)}`); }
    }
    for (const s of this.upgraded) s.destroy();
    const closed = this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
    for (const s of this.servers) s.closeAllConnections();
    await Promise.all(closed);
    this.servers.length = 0;
  }
}
