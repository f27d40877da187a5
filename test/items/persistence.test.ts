import 'reflect-metadata';
import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { SaveRegistry } from '../../core/save-registry';
import { makeDir, Keys, spawnController } from '../helpers/controller';
import { startItemsController, ITEM_KEYS_INI } from '../helpers/items';
import { readItemsState } from '../helpers/items-file';
import { until } from '../helpers/wait';

const itemsFile = (dir: string) => path.join(dir, 'runtime', 'uc_items.json');
const readItems = (dir: string) => JSON.parse(fs.readFileSync(itemsFile(dir), 'utf8'));
/** The file with its journal replayed: what a restart loads */
const onDisk = (dir: string) => readItemsState(itemsFile(dir));

test('instant: a change is on disk (in the journal) when the call answers; a stop folds the journal into one whole file; a restart restores both', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI });
  const first = await startItemsController(t, { dir });
  await first.ok('create', { i: 'unit:g/u' });
  t.truthy(onDisk(dir).items['unit:g/u'], 'written before the answer');
  await first.ok('set_prop', { i: 'unit:g/u', p: 'action_timeout', v: 7 });
  t.is(onDisk(dir).items['unit:g/u'].action_timeout, 7);
  await first.ok('create', { i: 'sensor:env/t' });
  await first.ok('update', { i: 'sensor:env/t', s: 1, v: '20.5' });
  t.is(onDisk(dir).items['sensor:env/t'].value, '20.5', 'an update is answered once on disk');
  t.false(fs.existsSync(itemsFile(dir)), 'a few changes go to the journal: the file is not rewritten for each');
  const t1 = (await first.ok('state', { i: 'sensor:env/t' })).t;
  await first.stop();
  const doc = readItems(dir);
  t.is(doc.version, 1);
  t.deepEqual(Object.keys(doc.items).sort(), ['sensor:env/t', 'unit:g/u']);
  t.deepEqual(onDisk(dir).segments, [], 'the stop folded the journal into the file');

  const second = await startItemsController(t, { dir });
  t.like(await second.ok('state', { i: 'sensor:env/t' }), { status: 1, value: '20.5', t: t1 });
  t.like(await second.ok('state', { i: 'unit:g/u' }), { status: 0, action_timeout: 7, action_enabled: true });
  await second.ok('destroy', { i: 'unit:g/u' });
  t.falsy(onDisk(dir).items['unit:g/u']);
  t.truthy(readItems(dir).items['unit:g/u'], 'the destroy is in the journal, not yet in the file');
  t.deepEqual(fs.readdirSync(path.join(dir, 'runtime')).filter((f) => f.endsWith('.tmp')), [], 'no temp files left');
});

test('instant: the journal is folded into the file once it holds more item states than 1000 (or the number of items)', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI });
  const c = await startItemsController(t, { dir });
  await c.ok('create', { i: 'sensor:g/a' });
  await c.ok('create', { i: 'sensor:g/b' });
  let v = 0;
  // sequential: each update is a journal write of its own (one item state each)
  for (; v < 990; v++) await c.ok('update', { i: 'sensor:g/a', v: String(v) });
  t.false(fs.existsSync(itemsFile(dir)), '992 states: still all in the journal');
  for (; v < 1020; v++) await c.ok('update', { i: 'sensor:g/a', v: String(v) });
  const doc = readItems(dir);
  t.truthy(doc.items['sensor:g/b'], 'the fold wrote every item');
  t.true(Number(doc.items['sensor:g/a'].value) >= 998, `the file holds a recent state (${doc.items['sensor:g/a'].value})`);
  const disk = onDisk(dir);
  t.is(disk.items['sensor:g/a'].value, '1019', 'file and journal together hold the last one');
  t.true(disk.segments.every((s) => s > doc.journal), `the segments the file holds are gone (${disk.segments} after ${doc.journal})`);
  t.true(disk.segments.length <= 1);
});

test('the journal is replayed at start after the file: segments the file holds are skipped, a torn record ends the replay with a warning', async (t) => {
  const record = (entry: object) => {
    const payload = Buffer.from(JSON.stringify(entry));
    const head = Buffer.alloc(8);
    head.writeUInt32LE(payload.length, 0);
    head.writeUInt32LE(zlib.crc32(payload), 4);
    return Buffer.concat([head, payload]);
  };
  const state = (value: string) => ({ status: 1, value, t: 1 });
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, files: {
    'runtime/uc_items.json': JSON.stringify({ version: 1, journal: 2, items: { 'sensor:g/a': state('file'), 'sensor:g/b': state('file'), 'sensor:g/c': state('file') } }),
  } });
  const rt = path.join(dir, 'runtime');
  // segment 2 is held by the file (a crash after the fold, before the drop): an older state that must not come back
  fs.writeFileSync(path.join(rt, 'uc_items.json.journal.2'), record({ 'sensor:g/a': state('old') }));
  const torn = record({ 'sensor:g/c': state('torn') });
  fs.writeFileSync(path.join(rt, 'uc_items.json.journal.3'), Buffer.concat([
    record({ 'sensor:g/b': state('journal'), 'sensor:g/d': state('new') }),
    record({ 'sensor:g/d': null, 'sensor:g/e': state('e') }),
    torn.subarray(0, torn.length - 3),
  ]));
  const c = await startItemsController(t, { dir });
  const values = Object.fromEntries((await c.ok('list')).map((i: any) => [i.oid, i.value]));
  t.deepEqual(values, { 'sensor:g/a': 'file', 'sensor:g/b': 'journal', 'sensor:g/c': 'file', 'sensor:g/e': 'e' });
  t.false(fs.existsSync(path.join(rt, 'uc_items.json.journal.2')), 'the held segment is removed');
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /uc_items\.json\.journal\.3: a torn record at byte \d+/);
  await c.ok('update', { i: 'sensor:g/a', v: 'after' });
  await c.stop();
  const doc = readItems(dir);
  t.deepEqual(Object.fromEntries(Object.entries(doc.items).map(([oid, s]: [string, any]) => [oid, s.value])),
    { 'sensor:g/a': 'after', 'sensor:g/b': 'journal', 'sensor:g/c': 'file', 'sensor:g/e': 'e' });
  t.deepEqual(fs.readdirSync(rt).filter((f) => f.includes('.journal.')), [], 'the stop folded every segment');
});

test('manual: nothing is written until save; unsaved changes are gone after a restart', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, ini: { server: { db_update: 'manual' } } });
  const first = await startItemsController(t, { dir });
  await first.ok('create', { i: 'lvar:g/a' });
  await first.ok('update', { i: 'lvar:g/a', v: 'saved' });
  t.false(fs.existsSync(itemsFile(dir)));
  t.deepEqual(await first.ctl.get(SaveRegistry).saveAll(), []);
  t.is(readItems(dir).items['lvar:g/a'].value, 'saved');
  await first.ok('update', { i: 'lvar:g/a', v: 'unsaved' });
  // the save parameter writes at once whatever the mode
  await first.ok('create', { i: 'lvar:g/b', save: true });
  t.truthy(readItems(dir).items['lvar:g/b']);
  t.is(readItems(dir).items['lvar:g/a'].value, 'unsaved', 'a save writes everything');
  await first.ok('update', { i: 'lvar:g/a', v: 'lost' });
  await first.stop();
  const second = await startItemsController(t, { dir });
  t.is((await second.ok('state', { i: 'lvar:g/a' })).value, 'unsaved');
});

test('on_exit: written at stop', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, ini: { server: { db_update: 'on_exit' } } });
  const first = await startItemsController(t, { dir });
  await first.ok('create', { i: 'sensor:g/s' });
  await first.ok('update', { i: 'sensor:g/s', s: -1, v: 'x' });
  t.false(fs.existsSync(itemsFile(dir)));
  await first.stop();
  t.like(readItems(dir).items['sensor:g/s'], { status: -1, value: 'x' });
  const second = await startItemsController(t, { dir });
  t.like(await second.ok('state', { i: 'sensor:g/s' }), { status: -1, value: 'x' });
});

test('an unreadable items file is kept aside with its journal, not overwritten; a malformed entry is skipped', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, files: {
    'runtime/uc_items.json': '{"items": {"unit:g/u": {"status": 1',
    'runtime/uc_items.json.journal.4': 'journal of the broken file',
  } });
  const first = await startItemsController(t, { dir });
  t.deepEqual(await first.ok('list'), []);
  const aside = fs.readdirSync(path.join(dir, 'runtime')).filter((f) => f.startsWith('uc_items.json.corrupt-')).sort();
  t.is(aside.length, 2);
  t.is(fs.readFileSync(path.join(dir, 'runtime', aside[0]), 'utf8'), '{"items": {"unit:g/u": {"status": 1');
  t.is(aside[1], `${aside[0]}.journal.4`);
  t.is(fs.readFileSync(path.join(dir, 'runtime', aside[1]), 'utf8'), 'journal of the broken file');
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /unreadable/);
  await first.stop();

  fs.writeFileSync(itemsFile(dir), JSON.stringify({ version: 1, items: {
    'unit:g/u': { status: 1, value: 'on', t: 1 },
    'unit:g/bad': { status: 'on' },
    'nonsense': { status: 1, value: null },
  } }));
  const second = await startItemsController(t, { dir });
  t.deepEqual((await second.ok('list')).map((i: any) => i.oid), ['unit:g/u']);
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /unit:g\/bad is malformed/);
});

test('a failed fold is reported, never crashes; changes go on to the journal meanwhile, and the next fold catches up', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI });
  const c = await startItemsController(t, { dir });
  await c.ok('create', { i: 'sensor:g/a' });
  // a folder where the file goes: the rename over it fails
  fs.mkdirSync(itemsFile(dir));
  const r = await c.client.rpc('save', { k: Keys.master });
  t.is(r.error?.code, 10);
  t.regex(r.error!.message, /save failed: items/);
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /cannot write .*uc_items\.json/);
  // under db_update instant an update is answered once on disk: the journal takes it
  await c.ok('create', { i: 'sensor:g/b' });
  await c.ok('update', { i: 'sensor:g/a', s: 1, v: 'x' });
  fs.rmdirSync(itemsFile(dir));
  t.deepEqual(onDisk(dir).items['sensor:g/a'].value, 'x');
  t.like(await c.ok('save'), { ok: true });
  t.like(readItems(dir).items, { 'sensor:g/a': { value: 'x' }, 'sensor:g/b': { status: 0 } });
  t.deepEqual(onDisk(dir).segments.filter((s) => s <= readItems(dir).journal), [], 'the fold dropped what it holds');
});

test('instant: an update from a plugin or a notifier (nobody waits for it) reaches the journal too', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, files: {
    'plugins/feeder.js': `module.exports.plugin = { name: 'feeder', kind: 'sysapi', version: '1.0.0', needs: ['items'],
      start(ctx) { ctx.register({ name: 'feed', permission: 'master', description: 'n service updates', params: { n: { type: 'integer', required: true, description: 'updates' } },
        handler(p) { for (let i = 1; i <= p.n; i++) ctx.service('items').update('sensor:g/fed', { status: 1, value: String(i) }); return true; } }); } };`,
  } });
  const child = await spawnController(t, dir);
  await child.client.ok('create', { k: Keys.master, i: 'sensor:g/fed' });
  await child.client.ok('feed', { k: Keys.master, n: 500 });
  await until('the last fed value on disk', () => onDisk(dir).items['sensor:g/fed']?.value === '500');
  child.proc.kill('SIGKILL');
  await child.exited;
  t.is(onDisk(dir).items['sensor:g/fed'].value, '500');
});
