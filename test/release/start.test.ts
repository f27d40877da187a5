import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { spawnListening, spawnController, makeDir, Keys } from '../helpers/controller';
import { checkoutRoot, npmCli } from './release';
import { sleep, until } from '../helpers/wait';

/**
 * The README's start command in the checkout: `npm start` runs the current
 * build without compiling it again, and a signal to npm (the process the
 * command created) stops the controller cleanly, leaving no orphan.
 */

const root = checkoutRoot();
const buildScript = path.join(root, '.ci', 'build.js');
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

/** The pids of a process's children (Linux /proc). */
function childrenOf(pid: number): number[] {
  const dir = `/proc/${pid}/task`;
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).flatMap((tid) => {
    try {
      return fs.readFileSync(path.join(dir, tid, 'children'), 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch { return []; }
  });
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test.serial(`npm start answers without compiling a current build; ${signal} to npm stops the controller cleanly, no orphan`, async (t) => {
    // the tests run on this build: never rebuild it under them
    const current = spawnSync(process.execPath, [buildScript, '--check']).status === 0;
    if (!current) return t.fail('the build is older than its sources: run `npm run build` first');
    const mainJs = path.join(root, 'dist', 'core', 'main.js');
    const builtAt = fs.statSync(mainJs).mtimeMs;
    const dir = makeDir(t);
    const began = Date.now();
    const npm = await spawnListening(t, [process.execPath, npmCli(), 'start', '--', '--dir', dir], { cwd: root, timeoutMs: 60_000, group: true });
    // npm runs the controller itself (exec): npm -> node, no shell in between to swallow the signal
    const [controller] = childrenOf(npm.proc.pid!);
    t.teardown(() => { if (controller && alive(controller)) process.kill(controller, 'SIGKILL'); });
    const r = await npm.client.get('test', { k: Keys.master });
    const firstAnswer = Date.now() - began;
    t.is(r.status, 200);
    t.log(`first answer ${firstAnswer} ms after npm start`);
    // not compiled again (the time is only logged: it says more about the machine's load than about the start)
    t.is(fs.statSync(mainJs).mtimeMs, builtAt);
    t.true(current && spawnSync(process.execPath, [buildScript, '--check']).status === 0, 'still current');

    t.truthy(controller, 'npm has a child');
    t.regex(fs.readFileSync(`/proc/${controller}/cmdline`, 'utf8'), /dist\/core\/main\.js/);
    npm.proc.kill(signal);
    t.is(await npm.exited, 0);
    await until('the controller to stop with npm', () => !alive(controller));
    // npm's exit may come before the last of its output has been read from the pipe
    await until(`npm's output to say ${signal}: stopping`, () => npm.output().includes(`${signal}: stopping`)).catch(() => undefined);
    t.regex(npm.output(), new RegExp(`${signal}: stopping`));
    t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /controller stopped/);
  });
}

test('the build script builds when a source is newer than the last build, and only then', async (t) => {
  // a small project of its own, built with the checkout's TypeScript
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), 'build-'));
  t.teardown(() => fs.rmSync(tree, { recursive: true, force: true }));
  fs.writeFileSync(path.join(tree, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { outDir: 'dist', rootDir: '.', module: 'commonjs', target: 'ES2022', types: [] }, include: ['core/**/*.ts'],
  }));
  fs.mkdirSync(path.join(tree, 'core'));
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(tree, 'node_modules'));
  const src = path.join(tree, 'core', 'a.ts');
  const out = path.join(tree, 'dist', 'core', 'a.js');
  fs.writeFileSync(src, 'export const a: number = 1;\n');
  const build = (...args: string[]) => spawnSync(process.execPath, [buildScript, '--root', tree, ...args], { encoding: 'utf8' });
  t.is(build('--check').status, 1, 'never built: stale');
  t.is(build('--if-stale').status, 0);
  t.regex(fs.readFileSync(out, 'utf8'), /a = 1/);
  t.is(build('--check').status, 0, 'built: current');
  const builtAt = fs.statSync(out).mtimeMs;
  t.is(build('--if-stale').status, 0);
  t.is(fs.statSync(out).mtimeMs, builtAt, 'current: not built again');
  fs.writeFileSync(src, 'export const a: number = 2;\n');
  const later = new Date(Date.now() + 2000);
  fs.utimesSync(src, later, later);
  t.is(build('--check').status, 1, 'a newer source: stale');
  t.is(build('--if-stale').status, 0);
  t.regex(fs.readFileSync(out, 'utf8'), /a = 2/);
  // a build that fails leaves no stamp: the next start tries again rather than run a broken build
  fs.writeFileSync(src, 'export const a: number = "text";\n');
  fs.utimesSync(src, new Date(Date.now() + 4000), new Date(Date.now() + 4000));
  const failed = build('--if-stale');
  t.not(failed.status, 0);
  t.is(build('--check').status, 1);
});

test('a console whose reader went away does not end the controller: SIGTERM still stops it cleanly', async (t) => {
  const dir = makeDir(t);
  const ctl = await spawnController(t, dir);
  // the reader closes its end: the controller's next console line ("SIGTERM: stopping") meets EPIPE
  ctl.proc.stdout!.destroy();
  ctl.proc.stderr!.destroy();
  await sleep(100);
  ctl.proc.kill('SIGTERM');
  t.is(await ctl.exited, 0);
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /controller stopped/);
});
