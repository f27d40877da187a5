import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { startController, makeDir, Keys, type Running } from '../helpers/controller';
import { until } from '../helpers/wait';
import { runMain, lineOf } from '../helpers/cli';
import { postgresUnavailable, sharedPostgres, startPostgres, PG_PASSWORD } from '../helpers/postgres';

/**
 * Several controllers as one: `[server] userdb` a PostgreSQL database that
 * two controllers (in this process, each its own folder) share for dynamic
 * keys and users, in EVA ICS 3.3.2's tables; a real server this file starts.
 */

const reason = postgresUnavailable();
if (reason) console.log(`PostgreSQL tests skipped: ${reason}`);
const pgtest = reason ? test.skip : test;
const shared = sharedPostgres();
test.after.always(() => shared.stop());

async function rows(uri: string, sql: string, params: unknown[] = []): Promise<any[]> {
  const c = new pg.Client({ connectionString: uri });
  c.on('error', () => undefined);
  await c.connect();
  try { return (await c.query(sql, params)).rows; } finally { await c.end(); }
}

const controller = (t: ExecutionContext, userdb: string): Promise<Running> => startController(t, { ini: { server: { userdb } } });

/** Two controllers on one new database; B's userdb in 3.3's SQLAlchemy spelling. */
async function pair(t: ExecutionContext) {
  const uri = await shared.database();
  const a = await controller(t, uri);
  const b = await controller(t, uri.replace('postgresql://', 'postgresql+psycopg2://'));
  return { uri, a, b };
}

/** The status `test` answers for key value `k` on a controller. */
const status = async (r: Running, k: string) => (await r.client.get('test', { k })).status;

/** Wait until `check` holds and say how long it took (ms): the time a change takes to reach the other controller. */
async function reaches(t: ExecutionContext, what: string, check: () => Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  await until(what, check);
  t.log(`${what}: ${Date.now() - t0} ms`);
}

pgtest('a key created, changed, regenerated and destroyed on one controller does the same on the other', async (t) => {
  const { uri, a, b } = await pair(t);
  const key = (await a.client.ok('create_key', { k: Keys.master, i: 'shared1' })).key as string;
  await reaches(t, 'created key works on B', async () => (await status(b, key)) === 200);
  // the row is EVA ICS 3.3.2's: m, s as 0/1, lists comma-joined
  await a.client.ok('set_key_prop', { k: Keys.master, i: 'shared1', p: 'groups', v: 'plant/#,lab/#' });
  await a.client.ok('set_key_prop', { k: Keys.master, i: 'shared1', p: 'sysfunc', v: true });
  const [row] = await rows(uri, 'SELECT * FROM apikeys WHERE k_id = $1', ['shared1']);
  t.like(row, { k_id: 'shared1', k: key, m: 0, s: 1, g: 'plant/#,lab/#', hal: '0.0.0.0/0,::/0' });
  await reaches(t, 'set_key_prop reaches B', async () => {
    const p = (await b.client.ok('list_key_props', { k: Keys.master, i: 'shared1' })) as { groups: string[]; sysfunc: boolean };
    return p.sysfunc && p.groups.join(',') === 'plant/#,lab/#';
  });
  // B's tokens of the key end when A changes it, as A's do
  const token = (await b.client.ok('login', { k: key })).token as string;
  t.is(await status(b, token), 200);
  await a.client.ok('set_key_prop', { k: Keys.master, i: 'shared1', p: 'hosts_allow', v: '127.0.0.0/8' });
  await reaches(t, 'B ends the token of a changed key', async () => (await status(b, token)) !== 200);
  const fresh = (await a.client.ok('regenerate_key', { k: Keys.master, i: 'shared1' })).key as string;
  await reaches(t, 'regenerated value works on B', async () => (await status(b, fresh)) === 200);
  t.not(await status(b, key), 200, 'the old value no longer');
  // a change on B comes back to A too
  await b.client.ok('set_key_prop', { k: Keys.master, i: 'shared1', p: 'items', v: 'sensor:env/t1' });
  await reaches(t, 'a change on B reaches A', async () => {
    const p = (await a.client.ok('list_key_props', { k: Keys.master, i: 'shared1' })) as { items: string[] };
    return p.items.join(',') === 'sensor:env/t1';
  });
  await a.client.ok('destroy_key', { k: Keys.master, i: 'shared1' });
  await reaches(t, 'destroyed key stops on B', async () => (await status(b, fresh)) === 403);
  t.deepEqual(await rows(uri, 'SELECT k_id FROM apikeys'), []);
  t.false((await b.client.ok('list_keys', { k: Keys.master }) as { key_id: string }[]).some((k) => k.key_id === 'shared1'));
});

pgtest('key property mcp = write is kept in 3.3.2\'s allow column (no column of its own) and reaches the other controller', async (t) => {
  const { uri, a, b } = await pair(t);
  await a.client.ok('create_key', { k: Keys.master, i: 'agent' });
  await a.client.ok('set_key_prop', { k: Keys.master, i: 'agent', p: 'allow', v: 'cmd' });
  await a.client.ok('set_key_prop', { k: Keys.master, i: 'agent', p: 'mcp', v: 'write' });
  const [row] = await rows(uri, 'SELECT * FROM apikeys WHERE k_id = $1', ['agent']);
  t.is(row.a, 'cmd,mcp:write');
  t.false('mcp' in row, 'no column');
  await reaches(t, 'mcp = write reaches B', async () => {
    const p = (await b.client.ok('list_key_props', { k: Keys.master, i: 'agent' })) as { mcp: string; allow: string[] };
    return p.mcp === 'write' && p.allow.join(',') === 'cmd';
  });
  await b.client.ok('set_key_prop', { k: Keys.master, i: 'agent', p: 'mcp', v: 'read' });
  await reaches(t, 'mcp = read reaches A', async () => (await a.client.ok('list_key_props', { k: Keys.master, i: 'agent' })).mcp === 'read');
  t.is((await rows(uri, 'SELECT a FROM apikeys WHERE k_id = $1', ['agent']))[0].a, 'cmd');
});

pgtest('a user created on one controller logs in on the other; a new password and a removal reach it too', async (t) => {
  const { uri, a, b } = await pair(t);
  await a.client.ok('create_key', { k: Keys.master, i: 'op' });
  await a.client.ok('create_user', { k: Keys.master, u: 'alice', p: 'first-Pass-1', a: 'op' });
  const login = (r: Running, p: string) => r.client.rpc('login', { u: 'alice', p });
  // known first (login's own time, a password hash, is not the change's), then logging in
  await reaches(t, 'user created on A known on B', async () => !(await b.client.rpc('get_user', { k: Keys.master, u: 'alice' })).error);
  t.falsy((await login(b, 'first-Pass-1')).error);
  const [row] = await rows(uri, 'SELECT u, p, k FROM users');
  t.like(row, { u: 'alice', k: 'op' });
  t.true((row.p as string).startsWith('$scrypt$'), 'the password is stored hashed');
  await a.client.ok('set_user_password', { k: Keys.master, u: 'alice', p: 'second-Pass-2' });
  await reaches(t, 'new password works on B', async () => !(await login(b, 'second-Pass-2')).error);
  await a.client.ok('destroy_user', { k: Keys.master, u: 'alice' });
  await reaches(t, 'removed user is refused on B', async () => (await b.client.ok('list_users', { k: Keys.master }) as unknown[]).length === 0);
  t.is((await login(b, 'second-Pass-2')).error?.code, 2);
});

pgtest('keys and users EVA ICS 3.3.2 wrote in its tables are used at start', async (t) => {
  const uri = await shared.database();
  // the tables as 3.3.2 made them (narrower k and p), with its values: a SHA-256 password hash, s as 0/1
  await rows(uri, `CREATE TABLE apikeys (k_id VARCHAR(64) NOT NULL, k VARCHAR(64), m INTEGER, s INTEGER, i VARCHAR(8192),
    g VARCHAR(8192), i_ro VARCHAR(8192), g_ro VARCHAR(8192), a VARCHAR(256), hal VARCHAR(8192), has VARCHAR(8192),
    pvt VARCHAR(8192), rpvt VARCHAR(8192), cdata VARCHAR(16384), PRIMARY KEY (k_id))`);
  await rows(uri, 'CREATE TABLE users (u VARCHAR(64) NOT NULL, p VARCHAR(64), k VARCHAR(2048), PRIMARY KEY (u))');
  const value = 'evaThreeThreeTwoKeyValue0123456789';
  await rows(uri, "INSERT INTO apikeys (k_id, k, m, s, g, a, hal) VALUES ('old', $1, 0, 1, 'plant/#', 'cmd', '127.0.0.1')", [value]);
  const sha = (await import('node:crypto')).createHash('sha256').update('oldpass').digest('hex');
  await rows(uri, "INSERT INTO users (u, p, k) VALUES ('bob', $1, 'old')", [sha]);
  const a = await controller(t, uri);
  t.is(await status(a, value), 200);
  const p = await a.client.ok('list_key_props', { k: Keys.master, i: 'old' });
  t.like(p, { sysfunc: true, groups: ['plant/#'], allow: ['cmd'] });
  t.falsy((await a.client.rpc('login', { u: 'bob', p: 'oldpass' })).error);
  // the hash stays 3.3.2's: a 3.3.2 controller on the same database still checks it
  t.is((await rows(uri, "SELECT p FROM users WHERE u = 'bob'"))[0].p, sha);
  // ours are wider: the columns 3.3.2 made were widened, its columns and values stay
  const cols = await rows(uri, "SELECT column_name, character_maximum_length AS n FROM information_schema.columns WHERE table_name IN ('apikeys', 'users') AND column_name IN ('k', 'p', 'i_deny') ORDER BY table_name, column_name");
  t.deepEqual(cols.map((c) => [c.column_name, c.n]), [['i_deny', 8192], ['k', 256], ['k', 2048], ['p', 256]]);
  await a.client.ok('create_user', { k: Keys.master, u: 'carol', p: 'carol-Pass-1', a: 'old' });
  // while it runs, what 3.3.2 writes (plain statements, no word to anyone) reaches it too
  const later = 'evaThreeThreeTwoWroteThisWhileRunning';
  await rows(uri, "INSERT INTO apikeys (k_id, k, m, s, hal) VALUES ('later', $1, 0, 0, '127.0.0.1')", [later]);
  await reaches(t, 'a key 3.3.2 inserts works', async () => (await status(a, later)) === 200);
  await rows(uri, "UPDATE apikeys SET hal = '10.9.9.9' WHERE k_id = 'later'");
  await reaches(t, 'a key 3.3.2 changes changes', async () => (await status(a, later)) === 403);
  await rows(uri, "DELETE FROM users WHERE u = 'bob'");
  await reaches(t, 'a user 3.3.2 deletes is gone', async () => (await a.client.rpc('login', { u: 'bob', p: 'oldpass' })).error?.code === 2);
});

pgtest('PostgreSQL away: /health names the user db, keys in memory go on; back: changes made meanwhile are seen', async (t) => {
  // a server of its own: the outage must not reach the other tests
  const server = await startPostgres(t);
  await server.createDatabase('outage');
  const uri = server.uri('outage');
  const a = await controller(t, uri);
  const b = await controller(t, uri);
  const key = (await a.client.ok('create_key', { k: Keys.master, i: 'before' })).key as string;
  await a.client.ok('create_user', { k: Keys.master, u: 'dave', p: 'dave-Pass-1', a: 'before' });
  await until('key on B', async () => (await status(b, key)) === 200);
  const login = () => a.client.rpc('login', { u: 'dave', p: 'dave-Pass-1' });
  t.falsy((await login()).error);
  await server.stop();
  const health = async (r: Running) => (await (await fetch(`${r.url}/health`)).json()) as { userdb?: { connected: boolean }; degraded?: string[] };
  t.log(JSON.stringify(await until('A degraded', async () => {
    const h = await health(a);
    return h.userdb?.connected === false && h.degraded?.some((d) => d.includes('user db')) ? h : undefined;
  })));
  t.is(await status(b, key), 200, 'keys held in memory still work');
  t.is((await a.client.rpc('create_key', { k: Keys.master, i: 'refused' })).error?.code, 10, 'a change cannot be shared: refused');
  t.like((await login()).error, { code: 10, message: 'the shared user db is unreachable: no login until it is back' });
  await server.start();
  await until('A connected again', async () => {
    const h = await health(a);
    return h.userdb?.connected === true && !h.degraded?.some((d) => d.includes('user db'));
  }, 60_000);
  t.falsy((await login()).error, 'login again once it is back');
  // B may reconnect later than A: a change made before its listener is back is read when it is
  await until('create on A once reachable', async () => !(await a.client.rpc('create_key', { k: Keys.master, i: 'after' })).error, 60_000);
  const after = (await a.client.ok('list_key_props', { k: Keys.master, i: 'after' })).key as string;
  await until('key made after the outage works on B', async () => (await status(b, after)) === 200, 60_000);
});

test('a userdb that is no PostgreSQL URI is refused with its line (exit 3), by --check-config and at start', async (t) => {
  for (const bad of ['mysql://u:secretpw@h/db', 'postgresql://u:secretpw@/db', 'postgresql://u:secretpw@h']) {
    const dir = makeDir(t, { ini: { server: { userdb: bad } } });
    for (const args of [['--dir', dir, '--check-config'], ['--dir', dir]]) {
      const r = await runMain(t, args);
      t.is(r.code, 3, r.err);
      const line = lineOf(r.err, `${dir}/etc/uc.ini:4: error: [server] userdb: `);
      t.truthy(line, r.err);
      t.false(r.err.includes('secretpw'), 'the password is never told');
    }
  }
});

pgtest('a wrong password or a missing database is refused with the line (exit 3), by --check-config and at start', async (t) => {
  const uri = await shared.database();
  for (const bad of [uri.replace(PG_PASSWORD, 'wrong-password'), uri.replace(/\/[a-z0-9_]+$/, '/no_such_db')]) {
    const dir = makeDir(t, { ini: { server: { userdb: bad } } });
    for (const args of [['--dir', dir, '--check-config'], ['--dir', dir]]) {
      const r = await runMain(t, args);
      t.is(r.code, 3, r.err);
      t.truthy(lineOf(r.err, `${dir}/etc/uc.ini:4: error: [server] userdb: `), r.err);
      t.false(r.err.includes(PG_PASSWORD) || r.err.includes('wrong-password'), 'the password is never told');
    }
  }
  // a good one passes the check
  const ok = await runMain(t, ['--dir', makeDir(t, { ini: { server: { userdb: uri } } }), '--check-config']);
  t.is(ok.code, 0, ok.err);
});

pgtest('more changes told at once than are kept waiting (10000): everything is read again instead', async (t) => {
  const uri = await shared.database();
  const a = await controller(t, uri);
  const health = async () => ((await (await fetch(`${a.url}/health`)).json()) as { userdb: { reloads: number } }).userdb;
  const before = (await health()).reloads;
  // one statement, one commit: 10500 notices arrive together
  await rows(uri, `INSERT INTO apikeys (k_id, k, m, s, hal)
    SELECT 'bulk' || g, md5(g::text) || md5('x' || g::text), 0, 0, '127.0.0.1' FROM generate_series(1, 10500) g`);
  await until('every key held', async () => (await a.client.ok('list_keys', { k: Keys.master }) as unknown[]).length === 10500 + 3, 60_000);
  t.true((await health()).reloads > before, 'read again as a whole');
  const last = (await rows(uri, "SELECT k FROM apikeys WHERE k_id = 'bulk10500'"))[0].k as string;
  t.is(await status(a, last), 200);
});

pgtest('a key\'s expiry is shared: in a table of ours, apikeys keeping 3.3.2\'s columns; past it both controllers refuse the key', async (t) => {
  const { uri, a, b } = await pair(t);
  const before = (await rows(uri, "SELECT column_name FROM information_schema.columns WHERE table_name = 'apikeys' ORDER BY column_name")).map((r) => r.column_name as string);
  const { key } = await a.client.ok('create_key', { k: Keys.master, i: 'ends', expires: '2100-01-01T00:00:00Z' }) as { key: string };
  t.deepEqual(await rows(uri, 'SELECT k_id, expires FROM eva_key_expires'), [{ k_id: 'ends', expires: 4102444800 }]);
  await reaches(t, 'the expiry reaches B', async () => (await b.client.ok('list_key_props', { k: Keys.master, i: 'ends' }) as { expires?: number }).expires === 4102444800);
  t.is(await status(b, key), 200);
  // expired now (a time past): B refuses the key, saying why
  await a.client.ok('set_key_prop', { k: Keys.master, i: 'ends', p: 'expires', v: 1 });
  await reaches(t, 'B refuses the expired key', async () => (await status(b, key)) === 403);
  t.regex((await b.client.rpc('test', { k: key })).error!.message, /^API key expired/);
  // cleared on B: A takes it back, the row goes
  await b.client.ok('set_key_prop', { k: Keys.master, i: 'ends', p: 'expires', v: '' });
  await reaches(t, 'the cleared expiry reaches A', async () => (await status(a, key)) === 200);
  t.deepEqual(await rows(uri, 'SELECT k_id FROM eva_key_expires'), []);
  await a.client.ok('set_key_prop', { k: Keys.master, i: 'ends', p: 'expires', v: '2100-01-01' });
  await a.client.ok('destroy_key', { k: Keys.master, i: 'ends' });
  t.deepEqual(await rows(uri, 'SELECT k_id FROM eva_key_expires'), [], 'a destroyed key leaves no expiry behind');
  const after = (await rows(uri, "SELECT column_name FROM information_schema.columns WHERE table_name = 'apikeys' ORDER BY column_name")).map((r) => r.column_name as string);
  t.deepEqual(after, before, 'apikeys has 3.3.2\'s columns, no more');
  t.false(after.includes('expires'));
});
