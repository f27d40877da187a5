import http from 'node:http';
import https from 'node:https';

/**
 * The HTTP API of one InfluxDB 1.x server (`/write`, `/query`) for one
 * notifier: one keep-alive connection pool, basic authorization as EVA ICS
 * 3.3 sent it (requests' HTTPBasicAuth), answers read up to a bound. The
 * credentials go in a header only: no message here ever holds them.
 */

export interface ClientOptions {
  /** the server, http(s)://host:port[/path]; credentials in it are used when username/password are not set */
  uri: string;
  db: string;
  username?: string;
  password?: string;
  /** https: check the server's certificate (3.3's ssl_verify) */
  verify: boolean;
}

export interface Answer { status: number; body: string }

/** What went wrong talking to the server; `status` when it answered. */
export class InfluxError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
    this.name = 'InfluxError';
  }
}

export class InfluxClient {
  private readonly base: URL;
  private readonly auth?: string;
  private readonly agent: http.Agent;
  private readonly mod: typeof http | typeof https;

  constructor(private readonly opts: ClientOptions) {
    const u = new URL(opts.uri);
    let user = opts.username;
    let pass = opts.password;
    if ((user === undefined || pass === undefined) && (u.username || u.password)) {
      user = decodeURIComponent(u.username);
      pass = decodeURIComponent(u.password);
    }
    u.username = '';
    u.password = '';
    this.base = u;
    // 3.3 sent credentials only when both were set
    if (user !== undefined && pass !== undefined) this.auth = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    this.mod = u.protocol === 'https:' ? https : http;
    this.agent = u.protocol === 'https:'
      ? new https.Agent({ keepAlive: true, maxSockets: 4, rejectUnauthorized: opts.verify })
      : new http.Agent({ keepAlive: true, maxSockets: 4 });
  }

  /** The URL of an API path (after the uri's own path, as 3.3 appended it) with the database. */
  private url(path: string, extra: Record<string, string> = {}): URL {
    const u = new URL(this.base.toString());
    u.pathname = `${u.pathname.replace(/\/+$/, '')}${path}`;
    u.search = '';
    u.searchParams.set('db', this.opts.db);
    for (const [k, v] of Object.entries(extra)) u.searchParams.set(k, v);
    return u;
  }

  /** POST `body` to `path`; the answer, read up to `maxAnswer` bytes (longer: an error). */
  post(path: string, body: string, contentType: string, maxAnswer: number, signal: AbortSignal, query?: Record<string, string>): Promise<Answer> {
    const url = this.url(path, query);
    const headers: Record<string, string | number> = { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) };
    if (this.auth) headers.Authorization = this.auth;
    return new Promise<Answer>((resolve, reject) => {
      if (signal.aborted) { reject(signal.reason instanceof Error ? signal.reason : new Error('aborted')); return; }
      const req = this.mod.request(url, { method: 'POST', headers, agent: this.agent }, (res) => {
        const parts: Buffer[] = [];
        let size = 0;
        res.on('data', (d: Buffer) => {
          size += d.length;
          if (size > maxAnswer) {
            req.destroy(new InfluxError(`answer longer than ${maxAnswer} bytes`, res.statusCode));
            return;
          }
          parts.push(d);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      });
      const onAbort = () => req.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      req.on('close', () => signal.removeEventListener('abort', onAbort));
      req.on('error', (err: Error & { code?: string }) => reject(err instanceof InfluxError ? err : new InfluxError(err.code ? `${err.code}: ${err.message}` : err.message)));
      req.end(body);
    });
  }

  /** The server's error text of an answer ({"error": ...}), else its first characters. */
  static errorOf(a: Answer): string {
    try {
      const j = JSON.parse(a.body) as { error?: unknown };
      if (typeof j.error === 'string') return j.error;
    } catch { /* not JSON */ }
    return a.body.slice(0, 200);
  }

  close(): void {
    this.agent.destroy();
  }
}
