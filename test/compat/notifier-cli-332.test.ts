import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { makeDir, startController } from '../helpers/controller';
import { NOTIFIER_FILES, notifierFiles } from './frames';
import { comparable, NOTIFIER_COMMANDS } from './notifier-commands';
import { diff, type Difference } from './replay';
import { reconcile } from './match';
import { FILE_DIFFERENCES } from './differences';
import { SETUP } from './calls';

const BIN = path.resolve(__dirname, '..', '..', 'plugins', 'notifiers', 'cli', 'notifier-bin.js');

function cli(dir: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--dir', dir, ...args], { timeout: 60_000 }, (error) => {
      resolve(error ? (typeof error.code === 'number' ? error.code : -1) : 0);
    });
  });
}

test('the same notifier command lines as given to 3.3.2\'s uc-notifier: same exit codes and files, but for the listed differences', async (t) => {
  const recordedCodes = JSON.parse(fs.readFileSync(path.join(path.dirname(NOTIFIER_FILES), 'cli.json'), 'utf8')) as { args: string[]; code: number }[];
  t.deepEqual(recordedCodes.map((c) => c.args), NOTIFIER_COMMANDS.map((a) => [...a]), 'recorded from these command lines');
  const dir = makeDir(t, { ini: { server: { name: 'eva33-uc' } } });
  const found: Difference[] = [];
  for (const [n, args] of NOTIFIER_COMMANDS.entries()) {
    const code = await cli(dir, args);
    // 3.3.2 exits 10 on any failure; compared as failed or not
    const [a, b] = [recordedCodes[n].code === 0 ? 'ok' : 'failed', code === 0 ? 'ok' : 'failed'];
    if (a !== b) found.push({ call: `cli:${args.slice(0, 2).join(' ')}`, transport: 'get', path: args.join(' '), eva332: a, ours: b });
  }
  const theirs = notifierFiles();
  const nd = path.join(dir, 'runtime', 'uc_notify.d');
  const ours = Object.fromEntries(fs.readdirSync(nd).filter((f) => f.endsWith('.json'))
    .map((f) => [f.slice(0, -5), JSON.parse(fs.readFileSync(path.join(nd, f), 'utf8')) as Record<string, unknown>]));
  for (const id of [...new Set([...Object.keys(theirs), ...Object.keys(ours)])].sort()) {
    const d: { path: string; a: unknown; b: unknown }[] = [];
    diff(theirs[id] ? comparable(theirs[id]) : '<no file>', ours[id] ? comparable(ours[id]) : '<no file>', '', d);
    for (const x of d) found.push({ call: `file:${id}`, transport: 'get', path: x.path, eva332: x.a, ours: x.b });
  }
  const { unlisted, stale } = reconcile(FILE_DIFFERENCES, found);
  t.deepEqual(unlisted.map((d) => JSON.stringify(d)), [], 'differences from 3.3.2\'s uc-notifier not in differences.ts');
  t.deepEqual(stale.map((l) => JSON.stringify(l)), [], 'differences.ts lists differences that no longer occur');
});

// 3.3.2's uc-notifier writes `db:history1.db:3600` as db "history1.db:3600" with no keep, and 3.3.2 itself
// then opens a file named history1.db:3600 and keeps the default 86400 s: the same file loads the same here
test('the db notifier file 3.3.2\'s uc-notifier wrote (keep time inside db) loads as 3.3.2 loads it', async (t) => {
  const files = { 'runtime/uc_notify.d/db_1.json': JSON.stringify(notifierFiles().db_1, null, 4) };
  const { client } = await startController(t, { keysIni: SETUP.keysIni, files });
  const n = await client.rpc('get_notifier', { k: SETUP.secrets.master, i: 'db_1' });
  t.is(n.error, undefined);
  const r = n.result as { problem?: unknown; keep?: unknown; db?: unknown } | undefined;
  t.is(r?.problem, undefined);
  t.is(r?.keep, 86400);
  t.is(r?.db, 'history1.db:3600');
});
