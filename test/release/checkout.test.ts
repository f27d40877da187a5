import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { MAIN, spawnListening } from '../helpers/controller';
import { needs } from '../helpers/tools';
import { checkoutRoot, freshControllerDir, installRelease, masterKey, nodeOnlyPath, packRelease, pkg } from './release';

const run = promisify(execFile);

/**
 * The checkout and the release as an operator meets them: what the README's
 * examples create in the checkout stays out of git; the tarball installs
 * without a word about scripts; the unit file's comment names the path the
 * guide installs to.
 */

let tmp: string;
test.before(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'checkout-')); });
test.after.always(() => { if (tmp) fs.rmSync(tmp, { recursive: true, force: true }); });

/** Every file under `dir`, relative, `/`-separated. */
function filesUnder(dir: string, rel = ''): string[] {
  return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    const r = rel ? `${rel}/${e.name}` : e.name;
    return e.isDirectory() ? filesUnder(dir, r) : [r];
  });
}

needs('git')('what the README\'s examples create in the checkout (a start, a db history, npm pack) is ignored by git', async (t) => {
  const root = checkoutRoot();
  const dir = freshControllerDir(path.join(tmp, 'ignore'));
  const cli = MAIN.replace(/core[/\\]main\.js$/, path.join('plugins', 'notifiers', 'cli', 'notifier-bin.js'));
  // the README's db history, as it writes it
  await run(process.execPath, [cli, '--dir', dir, 'create', '-y', 'db_1', 'db:history.db:86400']);
  await run(process.execPath, [cli, '--dir', dir, 'subscribe', 'state', 'db_1', '-v', '#', '-g', '#']);
  const ctl = await spawnListening(t, [process.execPath, MAIN, '--dir', dir]);
  const k = masterKey(dir);
  await ctl.client.ok('create', { k, i: 'sensor:env/temp' });
  await ctl.client.ok('update', { k, i: 'sensor:env/temp', s: 1, v: '21.5' });
  await ctl.client.ok('state_history', { k, a: 'db_1', i: 'sensor:env/temp', s: '1D' });
  ctl.proc.kill('SIGTERM');
  t.is(await ctl.exited, 0);
  const made = filesUnder(dir);
  t.true(made.some((f) => f.startsWith('history.db')), made.join(' '));
  // and npm pack's tarball, beside them
  made.push(`${pkg().name}-${pkg().version}.tgz`);
  const kept = made.filter((f) => spawnSync('git', ['check-ignore', '--no-index', '-q', f], { cwd: root }).status !== 0);
  t.deepEqual(kept, [], 'files git would offer to commit');
});

test('the packed package.json has no script npm runs or lists at install; the install says nothing about scripts', (t) => {
  const tarball = packRelease(tmp);
  const rel = installRelease(tarball, path.join(tmp, 'quiet', 'app'), nodeOnlyPath(path.join(tmp, 'quiet')));
  const scripts = Object.keys((JSON.parse(fs.readFileSync(path.join(rel.pkgDir, 'package.json'), 'utf8')) as { scripts?: object }).scripts ?? {});
  t.deepEqual(scripts.filter((s) => ['preinstall', 'install', 'postinstall', 'prepare'].includes(s)), []);
  t.notRegex(rel.output, /install-scripts|prepare|allowScripts/i, rel.output);
  // the checkout still builds at npm install
  t.true(scripts.includes('preprepare'));
});

test('the unit file\'s comment copies it from where the guide installs the release', (t) => {
  const root = checkoutRoot();
  const unit = fs.readFileSync(path.join(root, 'etc', 'eva-controller@.service'), 'utf8');
  const guide = fs.readFileSync(path.join(root, 'etc', 'README.md'), 'utf8');
  const cp = (text: string) => /cp (\S+\/etc\/eva-controller@\.service) \/etc\/systemd\/system\//.exec(text)?.[1];
  t.truthy(cp(guide));
  t.is(cp(unit), cp(guide));
  // the unit runs the controller from that same installed package
  const pkgDir = cp(guide)!.replace(/\/etc\/eva-controller@\.service$/, '');
  t.true(unit.includes(`ExecStart=/usr/bin/node ${pkgDir}/dist/core/main.js `), pkgDir);
  t.regex(guide, new RegExp(`npm install --prefix ${path.dirname(path.dirname(pkgDir)).replace(/\//g, '\\/')} `));
});
