#!/usr/bin/env node
'use strict';
/**
 * The build: `tsc -p tsconfig.json`, the plugins' `assets/` folders (files a
 * plugin serves as they are: the console's page) copied beside their
 * compiled JavaScript, then a stamp (dist/.build-stamp) dated when that build
 * started, written only when both succeeded.
 *
 * `--if-stale` builds only when a source (*.ts under the tsconfig's folders,
 * tsconfig.json, package.json) is newer than the stamp, so `npm start` on a
 * current build starts at once instead of spending seconds in tsc.
 * `--check` only says (exit 0 current, 1 stale). `--root DIR` works on another
 * tree (tests).
 */
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const args = process.argv.slice(2);
const rootAt = args.indexOf('--root');
const root = path.resolve(rootAt >= 0 ? args[rootAt + 1] : path.join(__dirname, '..'));
const stamp = path.join(root, 'dist', '.build-stamp');

/** The newest modification time (ms) among the build's inputs. */
function newestSource() {
  const tsconfig = path.join(root, 'tsconfig.json');
  let newest = 0;
  const see = (f) => { newest = Math.max(newest, fs.statSync(f).mtimeMs); };
  see(tsconfig);
  if (fs.existsSync(path.join(root, 'package.json'))) see(path.join(root, 'package.json'));
  // the folders the tsconfig includes ("core/**/*.ts" -> core)
  const include = JSON.parse(fs.readFileSync(tsconfig, 'utf8')).include ?? [];
  const walk = (dir) => {
    if (!fs.existsSync(dir)) return;
    see(dir); // a deleted file changes its folder's time
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && (p.endsWith('.ts') || p.includes(`${path.sep}assets${path.sep}`))) see(p);
    }
  };
  for (const top of new Set(include.map((g) => g.split('/')[0]))) walk(path.join(root, top));
  return newest;
}

function current() {
  if (!fs.existsSync(stamp)) return false;
  return newestSource() <= fs.statSync(stamp).mtimeMs;
}

/** Every `assets` folder under `dir` copied to the same place under dist/ (replacing what was there). */
function copyAssets(dir) {
  if (!fs.existsSync(dir)) return;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const p = path.join(dir, e.name);
    if (e.name !== 'assets') { copyAssets(p); continue; }
    const to = path.join(root, 'dist', path.relative(root, p));
    fs.rmSync(to, { recursive: true, force: true });
    fs.cpSync(p, to, { recursive: true });
  }
}

function build() {
  let tsc;
  try {
    tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
  } catch {
    process.stderr.write('the build needs TypeScript (a dev dependency): run `npm install` in the checkout, '
      + 'or install the release tarball, which holds the built JavaScript\n');
    process.exit(1);
  }
  const started = new Date();
  fs.rmSync(stamp, { force: true });
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.json')], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
  copyAssets(path.join(root, 'plugins'));
  fs.writeFileSync(stamp, '');
  fs.utimesSync(stamp, started, started); // a source saved during the build counts as newer
}

if (args.includes('--check')) process.exit(current() ? 0 : 1);
if (args.includes('--if-stale') && current()) process.exit(0);
build();
