import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { spawnListening } from '../helpers/controller';
import { which } from '../helpers/tools';
import {
  checkoutRoot, pkg, packRelease, tarballFiles, installRelease, nodeOnlyPath, freshControllerDir, masterKey, npmCli, cleanEnv,
} from './release';

const run = promisify(execFile);

/** One tarball for this file's tests, packed from the current build. */
let tmp: string;
let tarball: string;
test.before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'release-'));
  tarball = packRelease(tmp);
});
test.after.always(() => { if (tmp) fs.rmSync(tmp, { recursive: true, force: true }); });

test('the tarball holds the compiled JavaScript, the etc/ samples, the unit, README and LICENSE; no tests, no sources', (t) => {
  const files = tarballFiles(tarball);
  for (const f of ['package.json', 'README.md', 'LICENSE', 'dist/core/main.js', 'dist/plugins/notifiers/cli/notifier-bin.js',
    'dist/plugins/notifiers/db/history-worker.js', 'etc/uc.ini-dist', 'etc/lm.ini-dist', 'etc/sfa.ini-dist', 'etc/eva-controller@.service']) {
    t.true(files.includes(f), `${f} is in the tarball`);
  }
  t.deepEqual(files.filter((f) => f.startsWith('dist/test/') || f.startsWith('test/')), [], 'no tests');
  t.deepEqual(files.filter((f) => /\.(ts|map)$/.test(f) && !f.endsWith('.d.ts')), [], 'no TypeScript sources (declarations for plugin authors only), no source maps');
  t.deepEqual(files.filter((f) => /_apikeys\.ini$|\.pem$|^runtime\/|^xc\/|\.journal\.\d+$/.test(f)), [], 'no keys or runtime data of the checkout');
  t.deepEqual(files.filter((f) => f.startsWith('etc/')).sort(),
    ['etc/README.md', 'etc/eva-controller@.service', 'etc/lm.ini-dist', 'etc/sfa.ini-dist', 'etc/uc.ini-dist'], 'etc/ ships the samples, the unit and their guide, nothing else');
  // the README's links into core/, plugins/ and etc/ resolve inside the package
  for (const doc of ['core/README.md', 'plugins/README.md', 'plugins/FUNCTIONS.md', 'plugins/notifiers/README.md', 'etc/README.md']) t.true(files.includes(doc), doc);
  t.is(pkg().license, 'Apache-2.0');
  t.regex(fs.readFileSync(path.join(checkoutRoot(), 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0, January 2004/);
  const bins = pkg().bin;
  t.deepEqual(Object.keys(bins).sort(), ['eva-controller', 'lm-notifier', 'sfa-notifier', 'uc-notifier']);
  for (const target of Object.values(bins)) t.true(files.includes(target), `${target} is in the tarball`);
});

test('files a controller or an operator writes in the checkout never enter the release, whatever they are', (t) => {
  // a copy of what package.json's "files" can reach, plus everything a start and an operator write there
  const root = checkoutRoot();
  const copy = path.join(tmp, 'checkout');
  fs.mkdirSync(copy);
  for (const f of ['package.json', 'README.md', 'LICENSE', 'etc', 'core/README.md', 'plugins/README.md', 'plugins/corescripts/README.md', 'dist/core/main.js']) {
    fs.cpSync(path.join(root, f), path.join(copy, f), { recursive: true });
  }
  const written = ['etc/uc.ini', 'etc/lm.ini', 'etc/uc_apikeys.ini', 'etc/sfa_apikeys.ini', 'etc/cert.pem', 'etc/uc.ini.bak',
    'etc/uc.ini~', 'etc/.uc.ini.tmp', 'runtime/db/uc.db', 'runtime/uc_items.json', 'runtime/uc_items.json.journal.1', 'runtime/x.pid',
    'xc/cmd/run.sh', 'xc/uc/cs/script.js', 'dist/core/leftover.json'];
  for (const f of written) {
    fs.mkdirSync(path.dirname(path.join(copy, f)), { recursive: true });
    fs.writeFileSync(path.join(copy, f), 'key = written-by-a-controller-or-an-operator\n');
  }
  const out = execFileSync(process.execPath, [npmCli(), 'pack', '--dry-run', '--ignore-scripts', '--json'], {
    cwd: copy, encoding: 'utf8', env: { ...cleanEnv(process.env.PATH ?? ''), npm_config_loglevel: 'error' },
  });
  const packed = (JSON.parse(out) as { files: { path: string }[] }[])[0].files.map((f) => f.path);
  t.deepEqual(packed.filter((f) => written.includes(f)), []);
  t.true(packed.includes('etc/uc.ini-dist') && packed.includes('dist/core/main.js'), packed.join(' '));
});

test('installed with --omit=dev where only node is on PATH, the bins run a controller that answers test on both transports', async (t) => {
  const bin = nodeOnlyPath(path.join(tmp, 'a'));
  const rel = installRelease(tarball, path.join(tmp, 'a', 'app'), bin);
  // nothing to build with: no TypeScript in the installed tree, no tools on PATH
  t.false(fs.existsSync(path.join(rel.app, 'node_modules', 'typescript')));
  t.deepEqual(fs.readdirSync(bin), ['node']);
  const env = rel.env;
  const version = pkg().version;
  for (const name of Object.keys(pkg().bin)) t.is((await run(rel.bin(name), ['--version'], { env })).stdout.trim(), version, name);

  // a notifier through the CLI, before the first start: a db history (sql.js and its WASM from the installed package)
  const dir = freshControllerDir(path.join(tmp, 'a'));
  const cli = (...args: string[]) => run(rel.bin('uc-notifier'), ['--dir', dir, ...args], { env });
  await cli('create', '-y', 'hist', 'db:history.db:86400');
  await cli('subscribe', 'state', 'hist', '-v', '#', '-g', '#');
  t.regex((await cli('list')).stdout, /db\s+hist\s+\+?\s*/);

  const ctl = await spawnListening(t, [rel.bin('eva-controller'), '--dir', dir], { env, cwd: rel.app });
  t.regex(ctl.output(), /a master key was generated/);
  const k = masterKey(dir);
  const direct = await ctl.client.get('test', { k });
  t.is(direct.status, 200);
  t.like(direct.body, { result: 'OK', product_code: 'uc' });
  const viaRpc = await ctl.client.ok('test', { k });
  t.like(viaRpc, { ok: true, product_code: 'uc', version: direct.body.version });
  t.like(await ctl.client.ok('get_notifier', { k, i: 'hist' }), { type: 'db' });
  await ctl.client.ok('create', { k, i: 'sensor:env/temp' });
  await ctl.client.ok('update', { k, i: 'sensor:env/temp', s: 1, v: '21.5' });

  ctl.proc.kill('SIGTERM');
  t.is(await ctl.exited, 0);
  // the last events reach the history file at stop
  const file = path.join(dir, 'history.db');
  t.is(fs.readFileSync(file).subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
  if (which('sqlite3')) {
    const { stdout } = await run('sqlite3', ['-readonly', file, "SELECT value FROM state_history WHERE oid = 'sensor:env/temp'"]);
    t.true(stdout.split('\n').includes('21.5'), stdout);
  } else {
    t.log('sqlite3 is missing: the history file was checked by its header only');
  }
});
