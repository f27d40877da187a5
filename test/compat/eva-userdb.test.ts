import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import test from 'ava';
import { makeDir, startController, Keys } from '../helpers/controller';
import { sqlite3, pySqlite, userDbOf } from '../helpers/accounts';
import { needs } from '../helpers/tools';

/** The tables as EVA ICS 3.3 (SQLAlchemy) created them in runtime/db/<product>.db. */
const EVA_SCHEMA = `
CREATE TABLE apikeys (
  k_id VARCHAR(64) NOT NULL, k VARCHAR(64), m INTEGER, s INTEGER,
  i VARCHAR(8192), g VARCHAR(8192), i_ro VARCHAR(8192), g_ro VARCHAR(8192),
  i_deny VARCHAR(8192), g_deny VARCHAR(8192), a VARCHAR(256), hal VARCHAR(8192), has VARCHAR(8192),
  pvt VARCHAR(8192), rpvt VARCHAR(8192), cdata VARCHAR(16384), PRIMARY KEY (k_id));
CREATE TABLE users (u VARCHAR(64) NOT NULL, p VARCHAR(64), k VARCHAR(2048), PRIMARY KEY (u));
`;

const EVA_KEY = 'EvaOperatorKeyEvaOperatorKeyEvaOperatorKeyEvaOperatorKey01234567';
const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

/** A user db made by the sqlite3 tool: a dynamic key and a user with an unsalted SHA-256 password. */
function evaDb(dir: string, extraSql = ''): string {
  const file = userDbOf(dir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const sql = `${EVA_SCHEMA}
INSERT INTO apikeys VALUES ('evaop', '${EVA_KEY}', 0, 1, 'sensor:env/temp', 'lights, hall', '', 'ro1', '', '', 'cmd,lock',
  '0.0.0.0/0', '', 'pvt/x', '', 'd1');
INSERT INTO users VALUES ('operator', '${sha256('correct horse')}', 'evaop');
INSERT INTO users VALUES ('other', '${sha256('battery staple')}', 'evaop');
${extraSql}`;
  execFileSync('sqlite3', [file], { input: sql });
  return file;
}

needs('sqlite3', 'python3')('a user db made in the EVA ICS 3.3 schema loads; a SHA-256 password logs in and is rewritten to scrypt', async (t) => {
  const dir = makeDir(t);
  const file = evaDb(dir);
  const { client } = await startController(t, { dir });

  // the dynamic key of the old db is a key here, with its rights
  const acl = (await client.ok('test', { k: EVA_KEY })).acl;
  t.like(acl, {
    key_id: 'evaop', dynamic: true, sysfunc: true, items: ['sensor:env/temp'], groups: ['lights', 'hall'],
    groups_ro: ['ro1'], allow: { cmd: true, lock: true, device: false }, pvt: ['pvt/x'], cdata: ['d1'],
  });
  t.deepEqual(await client.ok('list_users', { k: Keys.master }), [{ key_id: 'evaop', user: 'operator' }, { key_id: 'evaop', user: 'other' }]);

  t.is((await client.rpc('login', { u: 'operator', p: 'wrong' })).error?.code, 2);
  t.is(sqlite3(file, "SELECT p FROM users WHERE u = 'operator'")[0].p, sha256('correct horse'), 'a failed login changes nothing');
  const login = await client.ok('login', { u: 'operator', p: 'correct horse' });
  t.like(login, { key: 'evaop', user: 'operator' });
  t.is((await client.ok('test', { k: login.token })).acl.key_id, 'evaop');

  const stored = String(sqlite3(file, "SELECT p FROM users WHERE u = 'operator'")[0].p);
  t.regex(stored, /^\$scrypt\$/, 'the old hash was rewritten at login');
  t.is(pySqlite(file, "SELECT p FROM users WHERE u = 'other'")[0].p, sha256('battery staple'), 'only that user');
  t.deepEqual(sqlite3(file, 'PRAGMA integrity_check'), [{ integrity_check: 'ok' }]);
  t.like(await client.ok('login', { u: 'operator', p: 'correct horse' }), { key: 'evaop', user: 'operator' }, 'the new hash works');
  t.is((await client.rpc('login', { u: 'operator', p: 'wrong' })).error?.code, 2);

  // our writes keep the old schema: every column of the EVA table is there, the old program's reader sees its rows
  await client.ok('create_key', { k: Keys.master, i: 'newer' });
  const cols = sqlite3(file, 'PRAGMA table_info(apikeys)').map((c) => c.name);
  t.deepEqual(cols, ['k_id', 'k', 'm', 's', 'i', 'g', 'i_ro', 'g_ro', 'i_deny', 'g_deny', 'a', 'hal', 'has', 'pvt', 'rpvt', 'cdata']);
  t.like(sqlite3(file, "SELECT * FROM apikeys WHERE k_id = 'evaop'")[0], { g: 'lights, hall', a: 'cmd,lock', s: 1, m: 0 }, 'rows we did not change are left as they were');
});

/** A stored scrypt hash of `password` with the given cost, in the form the controller writes. */
function scryptHash(password: string, ln: number, r: number, p: number): string {
  const salt = crypto.randomBytes(16);
  const hash = crypto.scryptSync(password, salt, 32, { N: 2 ** ln, r, p, maxmem: 256 * 2 ** ln * r + 1024 * 1024 });
  return `$scrypt$ln=${ln},r=${r},p=${p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

needs('sqlite3')('a stored scrypt hash of a lower cost logs in and is raised; one of a far higher cost never matches', async (t) => {
  const dir = makeDir(t);
  const file = evaDb(dir, `
INSERT INTO users VALUES ('cheap', '${scryptHash('pw1', 10, 8, 1)}', 'evaop');
INSERT INTO users VALUES ('costly', '${scryptHash('pw2', 16, 16, 1)}', 'evaop');`);
  const { client } = await startController(t, { dir });
  t.like(await client.ok('login', { u: 'cheap', p: 'pw1' }), { key: 'evaop', user: 'cheap' });
  t.regex(String(sqlite3(file, "SELECT p FROM users WHERE u = 'cheap'")[0].p), /^\$scrypt\$ln=15,r=8,p=1\$/, 'rewritten at today\'s cost');
  // 128 MiB per check: a row like this (forged, or from elsewhere) must not make every login that costly
  t.is((await client.rpc('login', { u: 'costly', p: 'pw2' })).error?.code, 2);
  t.regex(String(sqlite3(file, "SELECT p FROM users WHERE u = 'costly'")[0].p), /^\$scrypt\$ln=16,r=16,/, 'left as it was');
});

needs('sqlite3')('an older user db without the deny and cdata columns loads and gains them', async (t) => {
  const dir = makeDir(t);
  const file = userDbOf(dir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  execFileSync('sqlite3', [file], {
    input: `CREATE TABLE apikeys (k_id VARCHAR(64) NOT NULL, k VARCHAR(64), m INTEGER, s INTEGER, i VARCHAR(1024),
      g VARCHAR(1024), a VARCHAR(256), hal VARCHAR(1024), has VARCHAR(1024), pvt VARCHAR(1024), rpvt VARCHAR(1024), PRIMARY KEY (k_id));
    INSERT INTO apikeys VALUES ('old', '${EVA_KEY}', 0, 0, '', 'g1', '', '127.0.0.1', '', '', '');`,
  });
  const { client } = await startController(t, { dir });
  t.like((await client.ok('test', { k: EVA_KEY })).acl, { key_id: 'old', groups: ['g1'], items_deny: [], cdata: [] });
  const cols = sqlite3(file, 'PRAGMA table_info(apikeys)').map((c) => c.name);
  for (const c of ['i_ro', 'g_ro', 'i_deny', 'g_deny', 'cdata']) t.true(cols.includes(c), c);
  t.deepEqual(sqlite3(file, 'SELECT u FROM users'), [], 'the users table was created');
});

needs('sqlite3')('a user db left in WAL mode by another program loads', async (t) => {
  const dir = makeDir(t);
  const file = evaDb(dir, 'PRAGMA journal_mode = WAL;');
  t.is(fs.readFileSync(file)[18], 2, 'the file is in WAL mode');
  const { client } = await startController(t, { dir });
  t.like(await client.ok('login', { u: 'operator', p: 'correct horse' }), { key: 'evaop' });
  t.deepEqual(sqlite3(file, 'PRAGMA integrity_check'), [{ integrity_check: 'ok' }]);
});

test('a damaged user db is never overwritten: the key and user functions stay away', async (t) => {
  const dir = makeDir(t);
  const file = userDbOf(dir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const junk = Buffer.from('SQLite format 3\0' + 'x'.repeat(2000));
  fs.writeFileSync(file, junk);
  const { client } = await startController(t, { dir });
  t.is((await client.rpc('create_key', { k: Keys.master, i: 'x' })).error?.code, 6);
  t.is((await client.rpc('login', { u: 'a', p: 'b' })).error?.code, 6);
  t.is((await client.ok('test', { k: Keys.master })).acl.key_id, 'masterkey', 'the controller runs on');
  t.deepEqual(fs.readFileSync(file), junk);
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /not a readable SQLite database/);
});
