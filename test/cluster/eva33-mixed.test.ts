import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import pg from 'pg';
import { startController, Keys } from '../helpers/controller';
import { postgresUnavailable, sharedPostgres } from '../helpers/postgres';

/**
 * A fleet in migration: a real EVA ICS 3.3.2 controller and this one on one
 * user db. Recorded from 3.3.2 (v3.3.2, `userdb = postgresql://…`, psycopg2,
 * PostgreSQL 15): the tables it made (pg_dump --schema-only, below), the
 * hash it stored for `create_user u=alice p=alicepw`, and the statement it
 * logs users in with, which it leaves open: its connection stays "idle in
 * transaction" after the read, holding the table. Both ways were tried
 * against the real 3.3.2: its user logs in here; one made here with
 * `[cluster] eva33_passwords = yes` logs in there.
 */

const reason = postgresUnavailable();
if (reason) console.log(`PostgreSQL tests skipped: ${reason}`);
const pgtest = reason ? test.skip : test;
const shared = sharedPostgres();
test.after.always(() => shared.stop());

const EVA332_TABLES = [
  `CREATE TABLE api_log (id character varying(36) NOT NULL, t numeric(20,8) NOT NULL, tf numeric(20,8),
    gw character varying(128), ip character varying(45), auth character varying(128), u character varying(128),
    utp character varying(32), ki character varying(2048), func character varying(128), params character varying(512),
    status character varying(32), PRIMARY KEY (id))`,
  `CREATE TABLE apikeys (k_id character varying(64) NOT NULL, k character varying(64), m integer, s integer,
    i character varying(8192), g character varying(8192), i_ro character varying(8192), g_ro character varying(8192),
    i_deny character varying(8192), g_deny character varying(8192), a character varying(256), hal character varying(8192),
    has character varying(8192), pvt character varying(8192), rpvt character varying(8192), cdata character varying(16384),
    PRIMARY KEY (k_id))`,
  'CREATE TABLE users (u character varying(64) NOT NULL, p character varying(64), k character varying(2048), PRIMARY KEY (u))',
];
/** 3.3.2's row for alice/alicepw */
const ALICE = { u: 'alice', p: '6624974ea2baffac164422e4490376c1c31313cd97724ae8ce62fb3f0a0370f2', k: 'ops' };
/** how 3.3.2 checks a login (its statement, values inlined as it sent them) */
const eva332Login = (u: string, pw: string) => `select k from users where u = '${u}' and p = '${crypto.createHash('sha256').update(pw).digest('hex')}'`;

async function client(uri: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: uri });
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

pgtest('a user db EVA ICS 3.3.2 holds open: the controller starts, 3.3.2\'s user logs in here, and one made here with eva33_passwords logs in with 3.3.2\'s own statement', async (t) => {
  const uri = await shared.database();
  const setup = await client(uri);
  for (const sql of EVA332_TABLES) await setup.query(sql);
  await setup.query('INSERT INTO users (u, p, k) VALUES ($1, $2, $3)', [ALICE.u, ALICE.p, ALICE.k]);
  await setup.end();
  // 3.3.2's connection after a login: idle inside its transaction, holding the users table
  const eva332 = await client(uri);
  t.teardown(() => eva332.end().catch(() => undefined));
  await eva332.query('BEGIN');
  t.is((await eva332.query(eva332Login('alice', 'alicepw'))).rows.length, 1);

  const a = await startController(t, { ini: { server: { userdb: uri }, cluster: { eva33_passwords: 'yes' } } });
  t.regex(fs.readFileSync(path.join(a.dir, 'controller.log'), 'utf8'), /users\.p stays 64 characters wide: the table is held by another program/);
  // 3.3.2's user, here
  const login = await a.client.rpc('login', { u: 'alice', p: 'alicepw' });
  t.falsy(login.error, JSON.stringify(login.error));
  // a user made here, with 3.3.2's hash: 3.3.2's own statement (on its open transaction) finds it
  await a.client.ok('create_user', { k: Keys.master, u: 'bob', p: 'bobpw', a: 'ops' });
  t.deepEqual((await eva332.query(eva332Login('bob', 'bobpw'))).rows, [{ k: 'ops' }]);
  t.deepEqual((await eva332.query(eva332Login('bob', 'wrong'))).rows, []);

  // without the setting, a scrypt hash does not fit the column 3.3.2 holds: a clear error, nothing written
  const b = await startController(t, { ini: { server: { userdb: uri } } });
  const r = await b.client.rpc('create_user', { k: Keys.master, u: 'carol', p: 'carol-Pass-1', a: 'ops' });
  t.regex(r.error?.message ?? '', /users\.p is EVA ICS 3\.3\.2's 64 characters .*eva33_passwords = yes/);
  t.deepEqual((await eva332.query("select u from users where u = 'carol'")).rows, []);
  await eva332.query('COMMIT');
});
