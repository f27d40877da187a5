import test, { type ExecutionContext } from 'ava';
import crypto from 'node:crypto';
import pg from 'pg';
import { startController, Keys, type Running } from '../helpers/controller';
import { until, sleep } from '../helpers/wait';
import { pgRows as rows, postgresUnavailable, startPostgres } from '../helpers/postgres';

/**
 * The shared tokens' changes waiting to be written to PostgreSQL
 * (plugins/cluster/shared-tokens.ts) are bounded by `[webapi] max_tokens`:
 * with the database stopped they cannot outgrow the tokens held; with a
 * database that takes new tokens but not their changes, at the bound a use
 * is forgotten first, logins are refused and no end is lost. A server that
 * hangs holds a login no longer than login_wait.
 */

const reason = postgresUnavailable();
if (reason) console.log(`PostgreSQL tests skipped: ${reason}`);
const pgtest = reason ? test.skip : test;

const MAX = 5;

interface TokensHealth { connected: boolean; tokens: { held: number; waiting: number; lost: number } }
const health = async (r: Running) => ((await (await fetch(`${r.url}/health`)).json()) as { userdb: TokensHealth }).userdb;
const hash = (tok: string) => crypto.createHash('sha256').update(tok).digest('hex');
const login = async (r: Running) => (await r.client.ok('login', { k: Keys.master })).token as string;

/** A controller on `uri` holding at most MAX tokens (token_cache long: held tokens must keep working through a slow outage). */
const controller = (t: ExecutionContext, uri: string, webapi: Record<string, number> = {}) =>
  startController(t, { ini: { server: { userdb: uri }, webapi: { max_tokens: MAX, ...webapi }, cluster: { token_cache: 600 } } });

pgtest('PostgreSQL stopped: a change of every held token fills the waiting changes to the bound (max_tokens) and no further; nothing lost; back, all written', async (t) => {
  const server = await startPostgres(t);
  await server.createDatabase('tokens_bound_stop');
  const uri = server.uri('tokens_bound_stop');
  const a = await controller(t, uri);
  const toks: string[] = [];
  for (let i = 0; i < MAX; i++) toks.push(await login(a));
  await server.stop();
  await until('the link sees the stop', async () => !(await health(a)).connected, 60_000);
  for (const tok of toks.slice(0, 2)) await a.client.ok('set_token_readonly', { k: tok });
  for (const tok of toks.slice(2)) await a.client.ok('logout', { k: tok });
  // a second change of a token waiting already takes no room
  await a.client.ok('drop_tokens', { k: Keys.master, a: toks[0] });
  t.like((await health(a)).tokens, { waiting: MAX, lost: 0 });
  t.like((await a.client.rpc('login', { k: Keys.master })).error, { code: 10 }, 'no token comes while it is away');
  t.like((await health(a)).tokens, { waiting: MAX, lost: 0 });
  await server.start();
  await until('connected and written once back', async () => {
    const h = await health(a);
    return h.connected && h.tokens.waiting === 0;
  }, 60_000);
  const left = await rows(uri, 'SELECT h, ro FROM eva_tokens ORDER BY h');
  t.deepEqual(left, [{ h: hash(toks[1]), ro: true }], 'ended ones gone, the read-only one written');
  t.falsy((await a.client.rpc('login', { k: Keys.master })).error, 'login again');
});

pgtest('writes stuck while logins go on: at the bound (max_tokens) a use is forgotten first, logins answer 10 until the changes are written, no end is lost', async (t) => {
  const server = await startPostgres(t);
  await server.createDatabase('tokens_bound_stuck');
  const uri = server.uri('tokens_bound_stuck');
  // session_timeout 30: a use is written once it moves into another 3 s slice
  const a = await controller(t, uri, { session_timeout: 30 });
  const kept = await login(a);
  const first = await login(a);
  // another session holds the row of `first`: its end is written only when that session ends, and every change after it waits
  const locker = new pg.Client({ connectionString: uri });
  await locker.connect();
  t.teardown(() => locker.end().catch(() => undefined));
  await locker.query('BEGIN');
  await locker.query('SELECT h FROM eva_tokens WHERE h = $1 FOR UPDATE', [hash(first)]);
  await a.client.ok('logout', { k: first });
  // the end of `first` waits on its row; or, when the logout's own use of the token fell in another slice than the
  // login (the two either side of a slice's edge, or far apart on a loaded machine), that use's write waits there
  // and the end waits behind it, one more change held here
  const waiting = await until('a change of the first waiting on its row', async () => {
    const r = await rows(uri, "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ~ '^(DELETE FROM|UPDATE) eva_tokens'");
    return r.length === 1 ? String(r[0].query) : undefined;
  }, 60_000);
  const endHeldHere = waiting.startsWith('UPDATE') ? 1 : 0;
  const ended: string[] = [];
  for (let i = 0; i < MAX - 2 - endHeldHere; i++) {
    const tok = await login(a);
    await a.client.ok('logout', { k: tok });
    ended.push(tok);
  }
  // a use of the kept token in a new slice waits too
  await until('a use waits', async () => {
    t.is((await a.client.get('test', { k: kept })).status, 200);
    if ((await health(a)).tokens.waiting === MAX - 1) return true;
    await sleep(200);
    return false;
  });
  const x = await login(a);
  const y = await login(a);
  await a.client.ok('logout', { k: x });
  ended.push(x);
  t.like((await health(a)).tokens, { waiting: MAX, lost: 0 }, 'at the bound');
  const refused = (await a.client.rpc('login', { k: Keys.master })).error;
  t.like(refused, { code: 10 });
  t.regex(refused!.message, /the shared user db is behind: 5 token changes wait to be written \(\[webapi\] max_tokens\); no login until they are/);
  // one more end at the bound: the waiting use makes room, the ends stay (ended with the master key: a logout
  // with y would be a use of y too, one more change at the bound when its login fell in an earlier slice)
  await a.client.ok('drop_tokens', { k: Keys.master, a: y });
  ended.push(y);
  t.like((await health(a)).tokens, { waiting: MAX, lost: 1 });
  await locker.query('ROLLBACK');
  await until('written', async () => (await health(a)).tokens.waiting === 0, 60_000);
  const left = (await rows(uri, 'SELECT h FROM eva_tokens')).map((r: { h: string }) => r.h);
  t.deepEqual(left, [hash(kept)], 'every end written: no ended token is left for the others (or a reload here) to accept');
  t.is((await a.client.get('test', { k: kept })).status, 200, 'the kept token works (its forgotten use only moves its idle time elsewhere)');
  t.is((await a.client.get('test', { k: y })).status, 403);
  t.falsy((await a.client.rpc('login', { k: Keys.master })).error, 'login again');
});

pgtest('a server that hangs with its connections open: login answers 10 within login_wait (10 s), not never; the row that comes once it goes on is removed again', async (t) => {
  const server = await startPostgres(t);
  await server.createDatabase('tokens_hang');
  const uri = server.uri('tokens_hang');
  const a = await controller(t, uri);
  const first = await login(a);
  server.freeze(true);
  // before the server's stop (teardowns run last first): a stopped server takes no signal to end
  t.teardown(() => server.freeze(false));
  const t0 = performance.now();
  const r = await Promise.race([a.client.rpc('login', { k: Keys.master }), sleep(60_000).then(() => 'no answer within 60 s')]);
  const took = performance.now() - t0;
  t.log(`login answered after ${took.toFixed(0)} ms`);
  t.like(r, { error: { code: 10 } });
  t.true(took >= 9_500, 'not before login_wait');
  server.freeze(false);
  const later = await until('login again', async () => (await a.client.rpc('login', { k: Keys.master })).result?.token as string | undefined, 60_000);
  // the hung INSERT commits once the server goes on; then its row is deleted: three rows inserted, the two answered ones left
  await until('the late row inserted and removed', async () => {
    const [st] = await rows(uri, "SELECT n_tup_ins::int AS ins FROM pg_stat_user_tables WHERE relname = 'eva_tokens'");
    const left = (await rows(uri, 'SELECT h FROM eva_tokens ORDER BY h')).map((x: { h: string }) => x.h);
    return st?.ins === 3 && JSON.stringify(left) === JSON.stringify([hash(first), hash(later)].sort());
  }, 60_000);
  t.like((await health(a)).tokens, { held: 2, waiting: 0 });
});
