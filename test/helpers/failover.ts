import type { ExecutionContext } from 'ava';
import fs from 'node:fs';
import { makeDir, spawnController, startController, Keys, type Child, type Running } from './controller';
import { pgRows } from './postgres';
import { startBroker, type Broker, type BrokerOptions, type Owner } from './broker';
import { SparkplugHost } from './sparkplug-host';
import { NODE, sparkplugNotifier } from './sparkplug-node';
import { notifierFiles } from './notifiers';
import { until } from './wait';

/**
 * Controllers of one `[server] name` with `[cluster] failover` on one
 * PostgreSQL database, as real processes: the failover tests and
 * `npm run bench -- failover` start them the same way.
 */

export interface Member extends Child { node: string; dir: string }

export interface FailoverHealth {
  ok: boolean;
  role?: 'active' | 'standby';
  failover?: { name: string; node: string; holder: string | null; token: number | null; lease: number; lease_renew: number; grants: number };
}

/** A short lease, so the tests take seconds: lease 3 s, renewed every 0.5 s. */
export const FastLease = { lease: 3, lease_renew: 0.5 };

/**
 * A lease no stall of a loaded machine outlasts (10 s, renewed every second), for tests of what a takeover
 * does rather than when: with FastLease a busy CI machine can stall the active one past its lease, and the
 * standby then takes over before the test kills anything.
 */
export const SteadyLease = { lease: 10, lease_renew: 1 };

/** A controller of the pair (node name `node`), item states, cvars and locks shared, with `more` [cluster] settings and `files` in its dir. */
export async function startMember(t: Owner, userdb: string, node: string, more: Record<string, string | number> = {}, files?: Record<string, string>): Promise<Member> {
  const dir = makeDir(undefined, { files, ini: { server: { userdb, db: userdb }, cluster: { failover: 'yes', cvars: 'shared', locks: 'shared', node, ...FastLease, ...more } } });
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  // spawnController asks its owner only for teardown
  const child = await spawnController(t as ExecutionContext, dir);
  return { ...child, node, dir };
}

/**
 * One controller of `[cluster] failover` with a lease so long that its own
 * clock says active throughout (only the database can refuse it), active
 * when this resolves; `more`: other [cluster] settings.
 */
export async function longLeaseActive(t: ExecutionContext, userdb: string, more: Record<string, string> = {}): Promise<{ c: Running; h: FailoverHealth }> {
  const c = await startController(t, { ini: { server: { userdb, db: userdb }, cluster: { failover: 'yes', node: 'a', lease: 120, lease_renew: 40, ...more } } });
  const h = await untilRole(c.url, 'active');
  return { c, h };
}

/** Another controller's grant of the lease, written as a takeover writes it. */
export function grantElsewhere(userdb: string): Promise<unknown> {
  return pgRows(userdb, "UPDATE eva_lease SET token = token + 1, holder = 'thief', expires = now() + interval '1 minute'");
}

/**
 * A broker, a Sparkplug host application of group `plant`, and member `a`
 * with a Sparkplug node (edge node NODE), active and born; `files` for the
 * other members. `first`: the bdSeq of its birth.
 */
export async function sparkplugActive(t: ExecutionContext, userdb: string, broker: BrokerOptions = {}, more: Record<string, string | number> = {}): Promise<{ broker: Broker; host: SparkplugHost; files: Record<string, string>; a: Member; first: number }> {
  const b = await startBroker(t, broker);
  const host = await SparkplugHost.connect(t, b, 'plant');
  const files = notifierFiles({ sp1: sparkplugNotifier(b) });
  const a = await startMember(t, userdb, 'a', more, files);
  await untilRole(a.url, 'active');
  await host.until('the active one\'s NBIRTH', () => host.online(NODE), 60_000);
  return { broker: b, host, files, a, first: host.bdSeq(NODE)! };
}

export async function health(url: string): Promise<FailoverHealth> {
  const r = await fetch(`${url}/health`);
  return (await r.json()) as FailoverHealth;
}

/** Wait until the controller at `url` says `role` (health itself failing counts as not yet). */
export async function untilRole(url: string, role: 'active' | 'standby', ms = 60_000): Promise<FailoverHealth> {
  return until(`${url} ${role}`, async () => {
    const h = await health(url).catch(() => undefined);
    return h?.role === role ? h : undefined;
  }, ms);
}

/** A write every controller of the pair can be asked (a shared cvar); the JSON RPC answer. */
export function write(url: string, v: string) {
  return fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'set_cvar', params: { k: Keys.master, i: 'fo', v } }),
  }).then((r) => r.json() as Promise<{ result?: unknown; error?: { code: number; message: string } }>);
}

/**
 * SIGKILL the active member, and time until `standby` answers a write
 * (polled every 20 ms): the takeover a client sees, in ms.
 */
export async function killAndTime(active: Member, standby: Member): Promise<number> {
  active.proc.kill('SIGKILL');
  const t0 = performance.now();
  await active.exited;
  let n = 0;
  await until('the standby to take writes', async () => !(await write(standby.url, `w${n++}`)).error, 120_000);
  return performance.now() - t0;
}
