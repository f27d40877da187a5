import http from 'node:http';
import type { Socket } from 'node:net';
import { listenAt } from './ports';
import type { ExecutionContext } from 'ava';

/** A request as a receiver got it. */
export interface ReceivedRequest {
  method: string;
  url: URL;
  contentType: string;
  authorization?: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** the body parsed as JSON, when it is JSON */
  json?: any;
  /** the body parsed as a form, when it is one */
  form?: URLSearchParams;
}

export interface Answer { status?: number; body?: string }

/**
 * A real web hook receiver on loopback. `answer` decides each reply (default
 * {"result":"OK"}); `hold()` keeps replies back until `release()`; `down()`
 * is an outage and `up()` its end; `close()` takes it away for good (and
 * `listen()` would listen again on the same port, if no other process took it
 * meanwhile).
 */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  answer: (r: ReceivedRequest, n: number) => Answer = () => ({ body: '{"result":"OK"}' });
  private server: http.Server;
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  private waiters: (() => void)[] = [];
  /** an outage (down): every connection is reset as it comes */
  private refusing = false;
  port = 0;

  private constructor() {
    this.server = this.make();
  }

  private make(): http.Server {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const contentType = String(req.headers['content-type'] ?? '');
        const r: ReceivedRequest = {
          method: req.method ?? '', url: new URL(req.url ?? '/', 'http://x'), contentType, body, authorization: req.headers.authorization, headers: req.headers,
        };
        if (contentType.includes('json')) { try { r.json = JSON.parse(body); } catch { /* left undefined */ } }
        if (contentType.includes('urlencoded')) r.form = new URLSearchParams(body);
        const n = this.requests.push(r);
        for (const w of this.waiters.splice(0)) w();
        if (this.gate) await this.gate;
        const a = this.answer(r, n);
        res.writeHead(a.status ?? 200, { 'Content-Type': 'application/json' });
        res.end(a.body ?? '');
      });
    });
    server.on('connection', (socket: Socket) => { if (this.refusing) socket.resetAndDestroy(); });
    return server;
  }

  static async start(t: ExecutionContext): Promise<Receiver> {
    const r = new Receiver();
    await r.listen();
    t.teardown(() => r.close());
    return r;
  }

  get uri(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async listen(): Promise<void> {
    if (this.server.listening) return;
    this.port = await listenAt(this.server, this.port);
  }

  async close(): Promise<void> {
    this.release();
    if (!this.server.listening) return;
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.server.closeAllConnections();
    await closed;
    this.server = this.make(); // a closed server cannot listen again
  }

  /**
   * An outage that keeps the port: open connections end, new ones are reset
   * at once (the sender's try fails as at a closed port), until up(). A closed
   * port could be taken meanwhile by another process's listener on port 0, on
   * a machine running many tests.
   */
  down(): void {
    this.release();
    this.refusing = true;
    this.server.closeAllConnections();
  }

  /** The outage ends: connections are served again. */
  up(): void {
    this.refusing = false;
  }

  /** Answers wait from now on until release(). */
  hold(): void {
    this.gate ??= new Promise((r) => { this.openGate = r; });
  }

  release(): void {
    this.openGate?.();
    this.gate = undefined;
    this.openGate = undefined;
  }

  /** Resolve once `n` requests have arrived (all of them), or fail after `ms`. */
  async waitFor(n: number, ms = 15_000): Promise<ReceivedRequest[]> {
    const deadline = Date.now() + ms;
    while (this.requests.length < n) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`receiver got ${this.requests.length} requests, expected ${n}`);
      await new Promise<void>((r) => {
        const timer = setTimeout(r, left);
        this.waiters.push(() => { clearTimeout(timer); r(); });
      });
    }
    return this.requests;
  }

  /** Requests other than start-up tests. */
  events(): ReceivedRequest[] {
    return this.requests.filter((r) => subjectOf(r) !== 'test');
  }
}

/** The subject of a request of any web hook type. */
export function subjectOf(r: ReceivedRequest): string | null {
  return r.json?.subject ?? r.form?.get('subject') ?? r.url.searchParams.get('s');
}
