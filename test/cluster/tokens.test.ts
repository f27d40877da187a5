import test, { type ExecutionContext } from 'ava';
import crypto from 'node:crypto';
import { startController, spawnController, makeDir, Keys, type Running, type Client } from '../helpers/controller';
import { TestStream } from '../helpers/stream-client';
import { startProxy } from '../helpers/tcp-proxy';
import { until, sleep } from '../helpers/wait';
import { pgRows as rows, postgresUnavailable, sharedPostgres, startPostgres } from '../helpers/postgres';

/**
 * Login tokens across the controllers of one shared user db ([server]
 * userdb, plugins/cluster): a token from login on one works on the other,
 * and its end (logout, drop_tokens, its key or user changed) and
 * set_token_readonly reach the other within a second; with the database
 * away, held tokens work `[cluster] token_cache` seconds, then are refused.
 */

const reason = postgresUnavailable();
if (reason) console.log(`PostgreSQL tests skipped: ${reason}`);
const pgtest = reason ? test.skip : test;
const shared = sharedPostgres();
test.after.always(() => shared.stop());

const controller = (t: ExecutionContext, userdb: string, cluster: Record<string, number> = {}): Promise<Running> =>
  startController(t, { ini: { server: { userdb }, cluster } });

/** The status `test` answers for key or token `k`. */
const status = async (c: Client, k: string) => (await c.get('test', { k })).status;

/** ms until `check` holds, polled every 5 ms (the time a change takes to reach the other controller). */
async function latency(what: string, check: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return performance.now() - t0;
    if (performance.now() - t0 > 20_000) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

/**
 * The token as controller `c` holds it (list_tokens: by value, or by hash when it never saw it), or undefined.
 * Asked with the master key: polling a token that is not (or no longer) valid would book wrong guesses, whose answers the controller holds back.
 */
async function held(c: Client, tok: string): Promise<{ m: number } | undefined> {
  const ref = `sha256:${crypto.createHash('sha256').update(tok).digest('hex')}`;
  return (await c.ok('list_tokens', { k: Keys.master }) as { token: string; m: number }[]).find((x) => x.token === tok || x.token === ref);
}

pgtest('a token from login on A works on B; logout, drop_tokens, set_token_readonly, a changed key or user reach the other within 1 s (p99)', async (t) => {
  const uri = await shared.database();
  const a = await controller(t, uri);
  const b = await controller(t, uri);
  const key = (await a.client.ok('create_key', { k: Keys.master, i: 'op' })).key as string;
  await a.client.ok('create_user', { k: Keys.master, u: 'ann', p: 'ann-Pass-1', a: 'op' });
  await until('user known on B', async () => !(await b.client.rpc('get_user', { k: Keys.master, u: 'ann' })).error);
  const times: Record<string, number[]> = { login: [], logout: [], drop_tokens: [], set_token_readonly: [], key: [], user: [] };
  const arrives = (c: Client, tok: string) => latency('token on the other', async () => (await held(c, tok)) !== undefined);
  const ends = (c: Client, tok: string) => latency('token ends on the other', async () => (await held(c, tok)) === undefined);
  for (let i = 0; i < 12; i++) {
    // login on one, used on the other (alternating sides)
    const [x, y] = i % 2 ? [b, a] : [a, b];
    const tok = (await x.client.ok('login', { k: Keys.master })).token as string;
    times.login.push(await arrives(y.client, tok));
    t.is(await status(y.client, tok), 200);
    t.is((await y.client.ok('login', { a: tok })).key, 'masterkey', 'a token check on the other names its key');
    await x.client.ok('set_token_readonly', { k: tok });
    times.set_token_readonly.push(await latency('read-only on the other', async () => (await held(y.client, tok))?.m === 2));
    t.is((await y.client.rpc('list_keys', { k: tok })).error?.code, 15, 'read-only there too');
    await x.client.ok('logout', { k: tok });
    times.logout.push(await ends(y.client, tok));
    t.is(await status(y.client, tok), 403);
    // drop_tokens by token, by key and by user, on the side that did not issue them
    const t1 = (await x.client.ok('login', { k: key })).token as string;
    const t2 = (await x.client.ok('login', { u: 'ann', p: 'ann-Pass-1' })).token as string;
    await until('both on the other', async () => (await held(y.client, t1)) && (await held(y.client, t2)));
    await y.client.ok('drop_tokens', { k: Keys.master, ...[{ a: t1 }, { i: 'op' }, { u: 'ann' }][i % 3] });
    times.drop_tokens.push(await ends(x.client, i % 3 === 2 ? t2 : t1));
    await y.client.ok('drop_tokens', { k: Keys.master, i: 'op' });
    await until('both ended on the issuer', async () => !(await held(x.client, t1)) && !(await held(x.client, t2)));
  }
  // a key or user changed on one ends its tokens on the other too
  // (the password set again: a login on B while B applies the new hash is refused, as any login whose account changes meanwhile)
  const annOnB = async () => (await until('ann logs in on B', async () => (await b.client.rpc('login', { u: 'ann', p: 'ann-Pass-1' })).result)).token as string;
  for (let i = 0; i < 4; i++) {
    const tk = (await b.client.ok('login', { k: key })).token as string;
    const tu = await annOnB();
    await until('on A', async () => (await held(a.client, tk)) && (await held(a.client, tu)));
    await a.client.ok('set_key_prop', { k: Keys.master, i: 'op', p: 'groups', v: `g${i}/#` });
    times.key.push(await latency('a changed key ends its tokens on B', async () => !(await held(b.client, tk)) && !(await held(b.client, tu))));
    const tu2 = await annOnB();
    await until('on A', async () => (await held(a.client, tu2)) !== undefined);
    await a.client.ok('set_user_password', { k: Keys.master, u: 'ann', p: 'ann-Pass-1' });
    times.user.push(await ends(b.client, tu2));
  }
  const all: number[] = [];
  for (const [what, xs] of Object.entries(times)) {
    all.push(...xs);
    t.log(`${what}: p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms (${xs.length})`);
  }
  t.log(`all: p50 ${pct(all, 50).toFixed(1)} ms, p99 ${pct(all, 99).toFixed(1)} ms (${all.length})`);
  // p99 of 56 is their slowest: one stall of a loaded machine past 1 s is let through, a second is not, nor any past 5 s
  const slow = all.filter((ms) => ms >= 1000);
  t.true(slow.length <= 1 && Math.max(...all) < 5000, `p99 under 1 s (over it: ${slow.map((ms) => ms.toFixed(0)).join(', ') || 'none'})`);
  // at rest only the token's SHA-256: no value of a token is in the table
  const tok = (await a.client.ok('login', { k: key })).token as string;
  const [row] = await rows(uri, 'SELECT * FROM eva_tokens WHERE h = $1', [crypto.createHash('sha256').update(tok).digest('hex')]);
  t.like(row, { k_id: 'op', u: null, ro: false });
  t.false(JSON.stringify(await rows(uri, 'SELECT * FROM eva_tokens')).includes(tok.slice(6)), 'no token value at rest');
  // list_tokens on the other names a token it never saw by its hash; drop_tokens takes that name
  await until('on B', async () => (await b.client.ok('list_tokens', { k: Keys.master }) as unknown[]).length === 1);
  const [listed] = await b.client.ok('list_tokens', { k: Keys.master }) as { token: string }[];
  t.is(listed.token, `sha256:${row.h}`);
  await b.client.ok('drop_tokens', { k: Keys.master, a: listed.token });
  await until('dropped by its name on A', async () => !(await held(a.client, tok)));
  await until('and in the table', async () => (await rows(uri, 'SELECT h FROM eva_tokens')).length === 0);
});

pgtest('a token ended on one controller closes the stream opened with it on the other', async (t) => {
  const uri = await shared.database();
  const a = await controller(t, uri);
  const b = await controller(t, uri);
  const tok = (await a.client.ok('login', { k: Keys.master })).token as string;
  await until('token on B', async () => (await status(b.client, tok)) === 200);
  const s = await TestStream.open(t, b.url, tok);
  const t0 = performance.now();
  await a.client.ok('logout', { k: tok });
  const closed = await Promise.race([s.closed, sleep(5000).then(() => undefined)]);
  t.truthy(closed, 'closed');
  t.is(closed!.code, 4001);
  t.log(`stream on B closed ${(performance.now() - t0).toFixed(1)} ms after logout on A`);
});

pgtest('PostgreSQL away: held tokens work token_cache (3 s), then are refused with a clear message and their streams close; back: read again, a token ended meanwhile is gone', async (t) => {
  // a server of its own: the outage must not reach the other tests
  const server = await startPostgres(t);
  await server.createDatabase('tokens_outage');
  const uri = server.uri('tokens_outage');
  const CACHE = 3;
  const a = await controller(t, uri, { token_cache: CACHE });
  const b = await controller(t, uri, { token_cache: CACHE });
  const keep = (await a.client.ok('login', { k: Keys.master })).token as string;
  const gone = (await a.client.ok('login', { k: Keys.master })).token as string;
  await until('tokens on B', async () => (await held(b.client, keep)) && (await held(b.client, gone)));
  const s = await TestStream.open(t, b.url, keep);
  const stopping = performance.now();
  await server.stop();
  // the bound counts from the last heartbeat answered (every CACHE / 4 s), at most one beat before the stop began
  // (judged by when the answer came: a slow call on a loaded machine may be answered past the bound)
  const first = await status(b.client, keep);
  const early = performance.now() - stopping;
  if (early < CACHE * 750) t.is(first, 200, 'held tokens work at first');
  else t.log(`the stop and a call took ${early.toFixed(0)} ms: too late to see held tokens still working`);
  // ended on B while away (with the master key, which never goes stale): written when it is back
  await b.client.ok('drop_tokens', { k: Keys.master, a: gone });
  const refused = await until('tokens refused past token_cache', async () => {
    const r = await b.client.rpc('test', { k: keep });
    return r.error ? r.error : undefined;
  });
  const after = performance.now() - stopping;
  t.log(`refused ${after.toFixed(0)} ms after the stop began: ${refused.message}`);
  t.is(refused.code, 2);
  t.regex(refused.message, /unreachable for more than 3 s \(\[cluster\] token_cache\)/);
  t.true(after >= CACHE * 750, 'not before the bound less one heartbeat');
  t.is((await s.closed).code, 4001, 'the stream with the token closed');
  t.is(await status(b.client, Keys.master), 200, 'keys still work');
  t.like((await a.client.rpc('login', { k: Keys.master })).error, { code: 10 });
  await server.start();
  for (const r of [a, b]) {
    await until('connected again', async () => ((await (await fetch(`${r.url}/health`)).json()) as { userdb: { connected: boolean } }).userdb.connected, 60_000);
  }
  await until('the token ended on B while away is gone on A', async () => !(await held(a.client, gone)), 60_000);
  t.is(await status(a.client, keep), 200, 'the held token works again on A');
  t.is(await status(b.client, keep), 200, 'and on B');
  t.is(await status(a.client, gone), 403);
  t.falsy((await a.client.rpc('login', { k: Keys.master })).error, 'login again');
});

pgtest('two controllers as separate processes: a login on one is used on the other', async (t) => {
  const uri = await shared.database();
  const [a, b] = await Promise.all([0, 1].map(() => spawnController(t, makeDir(t, { ini: { server: { userdb: uri } } }))));
  const tok = (await a.client.ok('login', { k: Keys.master })).token as string;
  t.log(`a token from process A works on process B after ${(await latency('token on B', async () => (await status(b.client, tok)) === 200)).toFixed(1)} ms`);
  t.is((await b.client.ok('login', { a: tok })).key, 'masterkey');
  await b.client.ok('logout', { k: tok });
  await until('logged out on A', async () => (await status(a.client, tok)) === 403);
});

pgtest('a controller that stops ends none of the fleet\'s tokens (its dynamic keys leave its memory only); one that starts reads them', async (t) => {
  const uri = await shared.database();
  const a = await controller(t, uri);
  const b = await controller(t, uri);
  const key = (await a.client.ok('create_key', { k: Keys.master, i: 'op' })).key as string;
  await until('key on B', async () => (await status(b.client, key)) === 200);
  const tok = (await a.client.ok('login', { k: key })).token as string;
  await until('token on B', async () => (await held(b.client, tok)) !== undefined);
  await b.stop();
  // B's connections are closed: whatever it wrote is committed, and the row is there
  t.is((await rows(uri, 'SELECT h FROM eva_tokens')).length, 1);
  t.is(await status(a.client, tok), 200, 'still valid on A');
  const c = await controller(t, uri);
  t.is(await status(c.client, tok), 200, 'a controller started later accepts it at once');
});

pgtest('a controller cut off from the database while the others go on: back, it reads every token again (one ended meanwhile gone, one made meanwhile there)', async (t) => {
  const uri = await shared.database();
  const server = await shared.server();
  const proxy = await startProxy(t, { host: '127.0.0.1', port: server.port });
  const a = await controller(t, uri.replace(`:${server.port}/`, `:${proxy.port}/`));
  const b = await controller(t, uri);
  const ended = (await b.client.ok('login', { k: Keys.master })).token as string;
  const readonly = (await b.client.ok('login', { k: Keys.master })).token as string;
  await until('both on A', async () => (await held(a.client, ended)) && (await held(a.client, readonly)));
  await proxy.cut();
  const health = async () => ((await (await fetch(`${a.url}/health`)).json()) as { userdb: { connected: boolean } }).userdb.connected;
  await until('A cut off', async () => !(await health()));
  await b.client.ok('logout', { k: ended });
  await b.client.ok('set_token_readonly', { k: readonly });
  const made = (await b.client.ok('login', { k: Keys.master })).token as string;
  t.truthy(await held(a.client, ended), 'A was not told: it holds the ended token (within token_cache)');
  await proxy.restore();
  await until('A connected again', health, 60_000);
  t.falsy(await held(a.client, ended), 'the token ended meanwhile is gone');
  t.is((await held(a.client, readonly))?.m, 2, 'the one made read-only meanwhile is read-only');
  t.is(await status(a.client, made), 200, 'the one made meanwhile works');
});
