import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import test from 'ava';

/** The repository's .ci/<name>, found from the compiled test wherever the build went. */
function ciScript(name: string): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const f = path.join(dir, '.ci', name);
    if (fs.existsSync(f)) return f;
  }
  throw new Error(`.ci/${name} not found`);
}
const checkNativeScript = () => ciScript('check-native.sh');

/**
 * A project with one production dependency (and one dev dependency) in
 * node_modules, checked by a copy of the script: it checks the project it
 * sits in.
 */
function project(t: any, dep: Record<string, unknown>, extraFile?: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ci-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, '.ci'));
  fs.copyFileSync(checkNativeScript(), path.join(dir, '.ci', 'check-native.sh'));
  const write = (rel: string, obj: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), JSON.stringify(obj));
  };
  write('package.json', { name: 'p', version: '1.0.0', dependencies: { dep: '1.0.0' }, devDependencies: { devonly: '1.0.0' } });
  write('node_modules/dep/package.json', { name: 'dep', version: '1.0.0', ...dep });
  if (extraFile) fs.writeFileSync(path.join(dir, 'node_modules', 'dep', extraFile), '{}');
  // a dev dependency may build natively: only the production tree counts
  write('node_modules/devonly/package.json', { name: 'devonly', version: '1.0.0', scripts: { install: 'node-gyp rebuild' } });
  fs.writeFileSync(path.join(dir, 'node_modules', 'devonly', 'binding.gyp'), '{}');
  return dir;
}

const run = (dir: string, env: NodeJS.ProcessEnv = process.env) =>
  spawnSync('bash', [path.join(dir, '.ci', 'check-native.sh')], { encoding: 'utf8', timeout: 120_000, env });

test('check-native passes a production tree without native builds or install scripts', (t) => {
  const r = run(project(t, {}));
  t.is(r.status, 0, r.stdout + r.stderr);
  t.regex(r.stdout, /no native builds, no install scripts/);
});

test('check-native fails on a binding.gyp in the production tree', (t) => {
  const r = run(project(t, {}, 'binding.gyp'));
  t.is(r.status, 1);
  t.regex(r.stdout, /native build: dep has binding.gyp/);
  t.notRegex(r.stdout, /devonly/);
});

for (const script of ['preinstall', 'install', 'postinstall']) {
  test(`check-native fails on a production dependency with a ${script} script`, (t) => {
    const r = run(project(t, { scripts: { [script]: 'node build.js' } }));
    t.is(r.status, 1);
    t.regex(r.stdout, /install script: dep/);
  });
}

test('check-native fails when npm cannot list the tree, rather than pass having checked nothing', (t) => {
  const dir = project(t, {}, 'binding.gyp');
  const bin = path.join(dir, 'fake-bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'npm'), '#!/bin/sh\necho "npm broke" >&2\nexit 1\n', { mode: 0o755 });
  const r = run(dir, { ...process.env, PATH: `${bin}:${process.env.PATH}` });
  t.is(r.status, 1);
  t.regex(r.stdout, /npm ls could not list the production tree/);
});

/** .ci/count.js over TAP files written for the test: its output and exit code. */
function count(t: any, runs: Record<string, string>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'count-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const args = Object.entries(runs).map(([label, tap]) => {
    fs.writeFileSync(path.join(dir, `${label}.tap`), tap);
    return `${label}=${path.join(dir, `${label}.tap`)}`;
  });
  return spawnSync(process.execPath, [ciScript('count.js'), ...args], { encoding: 'utf8', timeout: 60_000 });
}

test('.ci/count.js counts each test once over the runs: failed in any, else passed in one, else skipped', (t) => {
  const tap = (...lines: string[]) => ['TAP version 13', ...lines, `1..${lines.length}`, ''].join('\n');
  const r = count(t, {
    node20: tap('ok 1 - a › one', 'ok 2 - a › two', 'ok 3 - b › needs a tool [skipped: needs sqlite3] # SKIP', 'ok 4 - b › flaky'),
    node24: tap('ok 1 - a › one', 'ok 2 - a › two', 'ok 3 - b › needs a tool [skipped: needs sqlite3] # SKIP', 'not ok 4 - b › flaky'),
    arm: tap('ok 1 - arm › the release # SKIP'),
  });
  t.is(r.status, 1, r.stdout + r.stderr);
  t.regex(r.stdout, /^# node24: 2 passed, 1 failed, 1 skipped$/m);
  t.regex(r.stdout, /^# FAILED \(node24\): b › flaky$/m);
  t.regex(r.stdout, /^# skipped: arm › the release$/m);
  t.is(r.stdout.trim().split('\n').at(-1), '2 passed, 1 failed, 2 skipped');
  const good = count(t, { node20: tap('ok 1 - a › one'), node26: tap('ok 1 - a › one') });
  t.is(good.status, 0, good.stdout);
  t.is(good.stdout.trim().split('\n').at(-1), '1 passed, 0 failed, 0 skipped');
  // nothing ran at all is a failure, not a pass
  t.is(count(t, { node20: '' }).status, 1);
});
