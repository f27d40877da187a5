import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import test from 'ava';

/** The repository's .ci/check-native.sh, found from the compiled test wherever the build went. */
function checkNativeScript(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const f = path.join(dir, '.ci', 'check-native.sh');
    if (fs.existsSync(f)) return f;
  }
  throw new Error('.ci/check-native.sh not found');
}

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
