import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';

/**
 * The release as an operator gets it: `npm pack` of the checkout, installed
 * with `npm install --omit=dev` into an empty folder by a PATH that holds
 * node and nothing else (no tsc, no compiler, no make, no python). Shared by
 * test/release/ and test/arm/.
 */

/** The checkout: found upwards from the build folder (dist/test/release). */
export function checkoutRoot(): string {
  for (let d = __dirname; d !== path.dirname(d); d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, 'package.json')) && fs.existsSync(path.join(d, 'etc', 'eva-controller@.service'))) return d;
  }
  throw new Error('the checkout (package.json beside etc/) was not found above ' + __dirname);
}

export const pkg = () => JSON.parse(fs.readFileSync(path.join(checkoutRoot(), 'package.json'), 'utf8')) as {
  name: string; version: string; license: string; bin: Record<string, string>;
};

/** npm's own script, run by the node that runs the tests (so Node 24 runs npm 11 under Node 24 too). */
export function npmCli(): string {
  const candidates = [process.env.npm_execpath, path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js')];
  const onPath = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim();
  if (onPath) candidates.push(path.join(path.dirname(fs.realpathSync(onPath)), 'npm-cli.js'));
  for (const c of candidates) if (c && /npm-cli\.js$/.test(c) && fs.existsSync(c)) return c;
  throw new Error('npm-cli.js not found');
}

/** A folder holding only a `node` link: a PATH on which nothing else can be found. */
export function nodeOnlyPath(tmp: string, node = process.execPath): string {
  const bin = path.join(tmp, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.symlinkSync(node, path.join(bin, 'node'));
  return bin;
}

/** An environment for npm: none of the test runner's npm_* variables, only HOME and the given PATH. */
export function cleanEnv(pathDirs: string): NodeJS.ProcessEnv {
  return {
    HOME: process.env.HOME ?? os.homedir(), PATH: pathDirs, LANG: 'C.UTF-8',
    npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false',
  };
}

/**
 * `npm pack` of the checkout as it is built now (--ignore-scripts: the
 * tests run on this build, and a rebuild under running tests would change it).
 */
export function packRelease(dest: string): string {
  const out = execFileSync(process.execPath, [npmCli(), 'pack', '--ignore-scripts', '--json', '--pack-destination', dest], {
    cwd: checkoutRoot(), encoding: 'utf8', env: { ...cleanEnv(process.env.PATH ?? ''), npm_config_loglevel: 'error' },
  });
  return path.join(dest, (JSON.parse(out) as { filename: string }[])[0].filename);
}

/** The paths inside a tarball (without the leading `package/`). */
export function tarballFiles(tarball: string): string[] {
  return execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
}

export interface Installed { app: string; pkgDir: string; bin(name: string): string; env: NodeJS.ProcessEnv; /** what npm printed */ output: string }

/**
 * Install `tarball` with `npm install --omit=dev` into `app` (an empty
 * folder), with only `node` on PATH. `npmArgs` adds flags (e.g. --cpu);
 * `node` is the command that runs npm (e.g. an arm64 node under qemu).
 */
export function installRelease(tarball: string, app: string, pathDirs: string, npmArgs: string[] = [], node: string[] = [process.execPath]): Installed {
  fs.mkdirSync(app, { recursive: true });
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'gateway', version: '1.0.0', private: true }));
  const env = cleanEnv(pathDirs);
  const r = spawnSync(node[0], [...node.slice(1), npmCli(), 'install', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', ...npmArgs, tarball], {
    cwd: app, env, encoding: 'utf8', timeout: 900_000,
  });
  if (r.status !== 0) throw new Error(`npm install of the release failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  const pkgDir = path.join(app, 'node_modules', pkg().name);
  return { app, pkgDir, env, bin: (name) => path.join(app, 'node_modules', '.bin', name), output: `${r.stdout}${r.stderr}` };
}

/** A fresh controller directory: only etc/<product>.ini (ephemeral port); the master key is generated at the first start. */
export function freshControllerDir(tmp: string, product = 'uc'): string {
  const dir = path.join(tmp, 'controller');
  fs.mkdirSync(path.join(dir, 'etc'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'etc', `${product}.ini`), `[server]\nlog_file = ${path.join(dir, 'controller.log')}\n\n[webapi]\nlisten = 127.0.0.1:0\n`);
  return dir;
}

/** The generated master key of a controller directory. */
export function masterKey(dir: string, product = 'uc'): string {
  const text = fs.readFileSync(path.join(dir, 'etc', `${product}_apikeys.ini`), 'utf8');
  const m = /^\[masterkey\][^[]*?^key\s*=\s*(\S+)/m.exec(text);
  if (!m) throw new Error(`no master key in ${product}_apikeys.ini`);
  return m[1];
}
