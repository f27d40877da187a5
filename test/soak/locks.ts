import fs from 'node:fs';
import { makeDir, spawnController, Keys, type Child } from '../helpers/controller';
import { startPostgres, type Postgres } from '../helpers/postgres';

/**
 * The lock checker (`npm run soak -- locks`, README.md): three controllers
 * (child processes) on one PostgreSQL with `[cluster] locks = shared`,
 * clients taking and releasing locks through all of them and writing to a
 * fenced register while they hold them, and faults injected meanwhile
 * (SIGKILL and restart of a controller, SIGSTOP of one past `e`, a
 * PostgreSQL restart). The history is then checked: no two holds of a lock
 * overlap, no write carries a token older than one already granted and
 * acknowledged, tokens follow real-time order.
 */

export interface LocksSoakOptions {
  /** acknowledged grants to reach */
  grants: number;
  /** faults to inject (at least) */
  faults: number;
  /** stop after this long even if the targets are not reached, seconds */
  seconds: number;
  clients?: number;
  locks?: number;
  /** `e` of every lock, seconds */
  expiry?: number;
  /** a fault every this many ms */
  faultEvery?: number;
  log?: (line: string) => void;
}

/** A grant as its client saw it: asked at `req`, answered at `ack` (this process's clock, ms); `e` seconds. */
export interface Grant { lock: string; token: number; client: number; req: number; ack: number; e: number; unlockSent?: number }
/** A write to the fenced register of `lock` at `at`, carrying its grant's token. */
export interface Write { lock: string; token: number; at: number }

export interface LocksSoakResult {
  grants: number;
  refused: Record<string, number>;
  faults: Record<string, number>;
  writes: number;
  /** writes the fenced register turned away (an older token than one it had seen) */
  fenced: number;
  /** writes made after a grant with a larger token had been acknowledged */
  staleWrites: number;
  /** pairs of holds of one lock both certain at once */
  overlaps: number;
  /** equal tokens of two grants of one lock, or a grant answered before another was asked with a larger token */
  tokenOrder: number;
  /** grants answered too late to hold at all (their controller was stopped past e, or slow) */
  lateGrants: number;
  seconds: number;
  examples: string[];
}

/** Margin of the clients' lease discipline and of the checker, ms: one host's clock read by two processes. */
const MARGIN = 100;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One controller of the three: restarted on its folder after SIGKILL (its port changes). */
interface Node { dir: string; child?: Child; url?: string; state: 'up' | 'stopped' | 'down' }

async function call(url: string, method: string, params: Record<string, unknown>, ms: number): Promise<{ result?: any; error?: { code: number; message: string } }> {
  const r = await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', method, params: { k: Keys.ops, ...params }, id: 1 }),
    signal: AbortSignal.timeout(ms),
  });
  return (await r.json()) as { result?: any; error?: { code: number; message: string } };
}

export async function runLocksSoak(o: LocksSoakOptions): Promise<LocksSoakResult> {
  const log = o.log ?? (() => undefined);
  const clients = o.clients ?? 16;
  const lockIds = Array.from({ length: o.locks ?? 6 }, (_, i) => `soak${i}`);
  const e = o.expiry ?? 2;
  /** `t` of every lock, seconds: below e, so a grant after a full wait still leaves a lease to write in */
  const wait = Math.min(1, e / 2);
  const teardowns: (() => unknown)[] = [];
  const owner = { teardown: (fn: () => unknown) => teardowns.push(fn) };
  const started = Date.now();
  const res: LocksSoakResult = {
    grants: 0, refused: {}, faults: {}, writes: 0, fenced: 0, staleWrites: 0, overlaps: 0, tokenOrder: 0, lateGrants: 0, seconds: 0, examples: [],
  };
  const grants: Grant[] = [];
  const writes: Write[] = [];
  /** the fenced register of each lock: the largest token written */
  const register = new Map<string, number>();
  let pgServer: Postgres | undefined;
  const nodes: Node[] = [];
  try {
    pgServer = await startPostgres(owner);
    const server = pgServer;
    await server.createDatabase('soak_locks');
    const uri = server.uri('soak_locks');
    for (let i = 0; i < 3; i++) {
      const dir = makeDir(undefined, { ini: { server: { userdb: uri }, cluster: { locks: 'shared' } } });
      nodes.push({ dir, state: 'down' });
    }
    const boot = async (n: Node) => {
      const c = await spawnController(undefined, n.dir);
      n.child = c;
      n.url = c.url;
      n.state = 'up';
    };
    await Promise.all(nodes.map(boot));
    log(`PostgreSQL on ${server.port}, controllers on ${nodes.map((n) => n.child!.port).join(', ')}`);

    let done = false;
    const enough = () => res.grants >= o.grants && Object.values(res.faults).reduce((a, b) => a + b, 0) >= o.faults;
    const timeUp = () => Date.now() - started > o.seconds * 1000;
    const count = (m: Record<string, number>, k: string) => { m[k] = (m[k] ?? 0) + 1; };

    const client = async (id: number) => {
      while (!done) {
        const lock = lockIds[Math.floor(Math.random() * lockIds.length)];
        const up = nodes.filter((n) => n.state !== 'down' && n.url);
        if (!up.length) { await sleep(50); continue; }
        const via = up[Math.floor(Math.random() * up.length)];
        const req = Date.now();
        let r;
        try {
          r = await call(via.url!, 'lock', { l: lock, t: wait, e }, (wait + 3) * 1000);
        } catch (err) {
          count(res.refused, (err as Error).name === 'TimeoutError' ? 'no answer' : 'connection');
          await sleep(20);
          continue;
        }
        const ack = Date.now();
        if (r.error) { count(res.refused, r.error.message.replace(/lock soak\d+/, 'lock').replace(/\(.*\)$/, '(…)')); continue; }
        const g: Grant = { lock, token: r.result.token as number, client: id, req, ack, e };
        grants.push(g);
        res.grants++;
        // the lease: this client holds the lock until it sends its unlock, and at most until e after it asked
        const leaseEnd = req + e * 1000 - MARGIN;
        if (ack >= leaseEnd) res.lateGrants++;
        /** one write to the lock's fenced register, inside the lease only */
        const write = (): boolean => {
          const at = Date.now();
          if (at >= leaseEnd) return false;
          writes.push({ lock, token: g.token, at });
          res.writes++;
          if (g.token < (register.get(lock) ?? 0)) res.fenced++;
          else register.set(lock, g.token);
          return true;
        };
        const n = 1 + Math.floor(Math.random() * 3);
        for (let w = 0; w < n; w++) {
          await sleep(Math.random() * 8);
          if (!write()) break;
        }
        // now and then the client lets the lock expire instead of releasing it, writing once more late in its lease
        if (Math.random() < 0.02) {
          await sleep(Math.max(0, leaseEnd - Date.now()) * (0.8 + Math.random() * 0.2));
          write();
          continue;
        }
        const back = nodes.filter((x) => x.state !== 'down' && x.url);
        const to = back[Math.floor(Math.random() * back.length)] ?? via;
        g.unlockSent = Date.now();
        try {
          await call(to.url!, 'unlock', { l: lock, token: g.token }, 3000);
        } catch {
          // a controller stopped or killed: the grant ends at its expiry
        }
      }
    };

    const faults = async () => {
      const kinds = ['kill', 'stop', 'pg'] as const;
      let i = 0;
      while (!done) {
        await sleep(o.faultEvery ?? 2000);
        if (done) break;
        const kind = kinds[i++ % kinds.length];
        const n = nodes[Math.floor(Math.random() * nodes.length)];
        if (kind === 'kill') {
          if (n.state !== 'up') continue;
          n.state = 'down';
          n.child!.proc.kill('SIGKILL');
          await n.child!.exited;
          count(res.faults, 'SIGKILL and restart of a controller');
          await boot(n).catch((err: unknown) => log(`restart failed: ${(err as Error).message}`));
        } else if (kind === 'stop') {
          if (n.state !== 'up') continue;
          n.state = 'stopped';
          n.child!.proc.kill('SIGSTOP');
          count(res.faults, 'SIGSTOP of a controller past e');
          await sleep(e * 1000 + 500);
          n.child!.proc.kill('SIGCONT');
          n.state = 'up';
        } else {
          await server.stop();
          count(res.faults, 'PostgreSQL restart');
          await sleep(300);
          await server.start();
        }
      }
    };

    const progress = setInterval(() => log(`${res.grants} grants, ${JSON.stringify(res.faults)}, refused ${JSON.stringify(res.refused)}`), 10_000);
    const stopper = (async () => {
      while (!enough() && !timeUp()) await sleep(100);
      done = true;
    })();
    await Promise.all([stopper, faults(), ...Array.from({ length: clients }, (_, i) => client(i))]);
    clearInterval(progress);
    check(grants, writes, res);
  } finally {
    for (const n of nodes) {
      if (n.child && n.child.proc.exitCode === null && n.child.proc.signalCode === null) {
        n.child.proc.kill('SIGCONT');
        n.child.proc.kill('SIGKILL');
      }
      fs.rmSync(n.dir, { recursive: true, force: true });
    }
    for (const fn of teardowns.reverse()) await fn();
  }
  res.seconds = (Date.now() - started) / 1000;
  return res;
}

/**
 * The checker. Every judgement uses only what the clients saw on this
 * process's clock, and counts as held only what was held for certain: a
 * grant from its answer (`ack`) to the earlier of its unlock being sent and
 * `req + e - MARGIN` (the database set the expiry at `e` after a moment
 * later than `req`). Unlocks carry the grant's token, so no other client's
 * late unlock ends a hold early.
 */
export function check(grants: Grant[], writes: Write[], res: Pick<LocksSoakResult, 'overlaps' | 'staleWrites' | 'tokenOrder' | 'examples'>): void {
  const example = (s: string) => { if (res.examples.length < 10) res.examples.push(s); };
  const end = (g: Grant) => Math.min(g.unlockSent ?? Infinity, g.req + g.e * 1000 - MARGIN);
  const byLock = new Map<string, Grant[]>();
  for (const g of grants) (byLock.get(g.lock) ?? byLock.set(g.lock, []).get(g.lock)!).push(g);
  for (const [lock, gs] of byLock) {
    // tokens: one per grant; a grant answered before another was asked has the smaller one
    const seen = new Map<number, Grant>();
    for (const g of gs) {
      if (seen.has(g.token)) { res.tokenOrder++; example(`${lock}: token ${g.token} granted twice`); }
      seen.set(g.token, g);
    }
    const byReq = [...gs].sort((a, b) => a.req - b.req);
    const byAck = [...gs].sort((a, b) => a.ack - b.ack);
    let j = 0;
    let maxAcked = -Infinity;
    for (const g of byReq) {
      while (j < byAck.length && byAck[j].ack < g.req) maxAcked = Math.max(maxAcked, byAck[j++].token);
      if (maxAcked >= g.token) { res.tokenOrder++; example(`${lock}: token ${g.token} asked at ${g.req} after token ${maxAcked} was answered`); }
    }
    // holds: certain windows of one lock never overlap (sorted by start, each against the latest end so far)
    const holds = gs.filter((g) => end(g) > g.ack).sort((a, b) => a.ack - b.ack);
    let last: Grant | undefined;
    for (const g of holds) {
      if (last && end(last) > g.ack) { res.overlaps++; example(`${lock}: token ${last.token} held until ${end(last)}, token ${g.token} from ${g.ack}`); }
      if (!last || end(g) > end(last)) last = g;
    }
    // fencing: no write with a token older than a grant already answered
    const ws = writes.filter((w) => w.lock === lock).sort((a, b) => a.at - b.at);
    let k = 0;
    let newest = -Infinity;
    for (const w of ws) {
      while (k < byAck.length && byAck[k].ack < w.at) newest = Math.max(newest, byAck[k++].token);
      if (w.token < newest) { res.staleWrites++; example(`${lock}: write with token ${w.token} at ${w.at} after token ${newest} was granted`); }
    }
  }
}

/** `npm run soak -- locks`: the figures, and exit 1 when a check failed or a target was not reached. */
export async function locksSoakMain(): Promise<void> {
  const grants = Number(process.env.GRANTS ?? 10_000);
  const faults = Number(process.env.FAULTS ?? 50);
  const r = await runLocksSoak({
    grants, faults, seconds: Number(process.env.SOAK_SECONDS ?? 1800),
    clients: Number(process.env.SOAK_CONCURRENCY ?? 16), log: (l) => console.log(l),
  });
  console.log(`
grants           ${r.grants} in ${r.seconds.toFixed(0)} s (${(r.grants / r.seconds).toFixed(0)}/s); ${r.lateGrants} answered too late to hold
refused          ${JSON.stringify(r.refused)}
faults           ${JSON.stringify(r.faults)}
writes           ${r.writes}, turned away by the fenced register ${r.fenced}
stale writes     ${r.staleWrites}
overlapping holds ${r.overlaps}
tokens out of order ${r.tokenOrder}
${r.examples.join('\n')}`);
  const nFaults = Object.values(r.faults).reduce((a, b) => a + b, 0);
  const missed = [
    r.overlaps > 0 && 'overlapping holds', r.staleWrites > 0 && 'stale writes', r.fenced > 0 && 'fenced writes', r.tokenOrder > 0 && 'tokens out of order',
    r.grants < grants && 'too few grants', nFaults < faults && 'too few faults',
  ].filter(Boolean);
  console.log(missed.length ? `\nTARGETS MISSED: ${missed.join(', ')}` : '\nall targets met');
  process.exit(missed.length ? 1 : 0);
}
