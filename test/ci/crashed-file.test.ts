import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

/**
 * `npm test` (.ci/ava.js) counts a test file whose process crashed as a
 * failure and names it in its closing lines; ava alone says "N tests passed".
 */
const root = path.resolve(__dirname, '..', '..', '..');

function project(t: import('ava').ExecutionContext, files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ava-crash-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ava: { files: ['t/*.test.js'], workerThreads: false } }));
  fs.mkdirSync(path.join(dir, 't'));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, 't', name), text);
  return dir;
}

const CRASHES = `const test = require('ava');
test('runs', (t) => t.pass());
test('never ends', (t) => new Promise(() => { t.pass(); }));
setTimeout(() => process.kill(process.pid, 'SIGSEGV'), 300);
`;
const FINE = `const test = require('ava');\ntest('fine', (t) => t.pass());\n`;

test('a file that dies of SIGSEGV is one failure, named, and the run fails', (t) => {
  const dir = project(t, { 'crash.test.js': CRASHES, 'fine.test.js': FINE });
  const r = spawnSync(process.execPath, [path.join(root, '.ci', 'ava.js')], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  const lines = r.stdout.trim().split('\n');
  t.is(lines.at(-1), '2 passed, 1 failed', r.stdout);
  t.regex(r.stdout, /crashed test file.*t\/crash\.test\.js \(exited due to SIGSEGV\)/);
  t.is(r.status, 1);
});

test('with --tap the stream is ava\'s and the crashed file follows as a comment', (t) => {
  const dir = project(t, { 'crash.test.js': CRASHES, 'fine.test.js': FINE });
  const r = spawnSync(process.execPath, [path.join(root, '.ci', 'ava.js'), '--tap'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  t.regex(r.stdout, /^not ok \d+ - t\/crash\.test\.js exited due to SIGSEGV$/m);
  t.regex(r.stdout, /^# crashed test file: t\/crash\.test\.js/m);
  t.is(r.status, 1);
});

test('with a failure beside passing tests the passed ones are still counted (ava then names only the failed)', (t) => {
  const dir = project(t, { 'fine.test.js': FINE, 'fails.test.js': `const test = require('ava');\ntest('ok too', (t) => t.pass());\ntest('fails', (t) => t.fail());\n` });
  const r = spawnSync(process.execPath, [path.join(root, '.ci', 'ava.js')], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  t.is(r.stdout.trim().split('\n').at(-1), '2 passed, 1 failed', r.stdout);
  t.is(r.status, 1);
});

test('a clean run ends with its own count and exit 0', (t) => {
  const dir = project(t, { 'fine.test.js': FINE });
  const r = spawnSync(process.execPath, [path.join(root, '.ci', 'ava.js')], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  t.is(r.stdout.trim().split('\n').at(-1), '1 passed, 0 failed', r.stdout);
  t.is(r.status, 0);
});
