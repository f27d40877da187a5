import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import 'reflect-metadata';
import test from 'ava';
import { discoverPlugins, pickDefinition } from '../../core/plugins';
import { BuiltinPlugins } from '../../plugins/manifest';

const BUILTIN = path.resolve(__dirname, '..', '..', 'plugins');

/*
 * In a test file of its own: this process has loaded nothing of plugins/
 * before, so its module cache shows what discovery loaded.
 */
test.serial('discovery loads the built-in plugins of the manifest, not the helpers, CLI and worker code beside them', async (t) => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'dropins-'));
  t.teardown(() => fs.rmSync(empty, { recursive: true, force: true }));
  const skipped: string[] = [];
  const found = await discoverPlugins(empty, (file, code) => skipped.push(`${file}: ${code}`));
  t.deepEqual(skipped, []);
  const names = found.map((l) => l.def.name);
  t.deepEqual(found.map((l) => path.relative(BUILTIN, path.dirname(l.file))), [...BuiltinPlugins]);
  for (const name of ['sysapi-keys', 'sysapi-users', 'corescripts', 'notifiers', 'stream']) t.true(names.includes(name), name);
  const loaded = Object.keys(require.cache).filter((f) => f.startsWith(BUILTIN + path.sep)).map((f) => path.relative(BUILTIN, f));
  // the notifier CLI and the history worker's entry are their own programs
  t.false(loaded.some((f) => f.startsWith(path.join('notifiers', 'cli'))), loaded.join(' '));
  t.false(loaded.includes(path.join('notifiers', 'db', 'history-worker.js')));
  // what a plugin imports from a deeper folder is there, loaded by the plugin
  t.true(loaded.includes(path.join('notifiers', 'mqtt', 'connection.js')));
});

test.serial('every folder of plugins/ whose index exports a plugin definition is in the manifest', (t) => {
  const entries: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      else if (e.name === 'index.js' && pickDefinition(require(p))) entries.push(path.relative(BUILTIN, dir));
    }
  };
  walk(BUILTIN);
  t.deepEqual(entries.sort(), [...BuiltinPlugins].sort());
});
