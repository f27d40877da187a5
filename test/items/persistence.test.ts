import 'reflect-metadata';
import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { SaveRegistry } from '../../core/save';
import { makeDir, Keys } from '../helpers/controller';
import { start, KEYS_INI } from './setup';
import { until } from '../helpers/wait';

const itemsFile = (dir: string) => path.join(dir, 'runtime', 'uc_items.json');
const readItems = (dir: string) => JSON.parse(fs.readFileSync(itemsFile(dir), 'utf8'));

test('instant: configuration is on disk when the call answers, state soon after; a restart restores both', async (t) => {
  const dir = makeDir(t, { keysIni: KEYS_INI });
  const first = await start(t, { dir });
  await first.ok('create', { i: 'unit:g/u' });
  t.truthy(readItems(dir).items['unit:g/u'], 'written before the answer');
  await first.ok('set_prop', { i: 'unit:g/u', p: 'action_timeout', v: 7 });
  t.is(readItems(dir).items['unit:g/u'].action_timeout, 7);
  await first.ok('create', { i: 'sensor:env/t' });
  await first.ok('update', { i: 'sensor:env/t', s: 1, v: '20.5' });
  await until('sensor:env/t = 20.5 saved', () => readItems(dir).items['sensor:env/t'].value === '20.5');
  const t1 = (await first.ok('state', { i: 'sensor:env/t' })).t;
  const doc = readItems(dir);
  t.is(doc.version, 1);
  t.deepEqual(Object.keys(doc.items).sort(), ['sensor:env/t', 'unit:g/u']);
  await first.stop();

  const second = await start(t, { dir });
  t.like(await second.ok('state', { i: 'sensor:env/t' }), { status: 1, value: '20.5', t: t1 });
  t.like(await second.ok('state', { i: 'unit:g/u' }), { status: 0, action_timeout: 7, action_enabled: true });
  await second.ok('destroy', { i: 'unit:g/u' });
  t.falsy(readItems(dir).items['unit:g/u']);
  t.deepEqual(fs.readdirSync(path.join(dir, 'runtime')).filter((f) => f.endsWith('.tmp')), [], 'no temp files left');
});

test('manual: nothing is written until save; unsaved changes are gone after a restart', async (t) => {
  const dir = makeDir(t, { keysIni: KEYS_INI, ini: { server: { db_update: 'manual' } } });
  const first = await start(t, { dir });
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
  const second = await start(t, { dir });
  t.is((await second.ok('state', { i: 'lvar:g/a' })).value, 'unsaved');
});

test('on_exit: written at stop', async (t) => {
  const dir = makeDir(t, { keysIni: KEYS_INI, ini: { server: { db_update: 'on_exit' } } });
  const first = await start(t, { dir });
  await first.ok('create', { i: 'sensor:g/s' });
  await first.ok('update', { i: 'sensor:g/s', s: -1, v: 'x' });
  t.false(fs.existsSync(itemsFile(dir)));
  await first.stop();
  t.like(readItems(dir).items['sensor:g/s'], { status: -1, value: 'x' });
  const second = await start(t, { dir });
  t.like(await second.ok('state', { i: 'sensor:g/s' }), { status: -1, value: 'x' });
});

test('an unreadable items file is kept aside, not overwritten; a malformed entry is skipped', async (t) => {
  const dir = makeDir(t, { keysIni: KEYS_INI, files: { 'runtime/uc_items.json': '{"items": {"unit:g/u": {"status": 1' } });
  const first = await start(t, { dir });
  t.deepEqual(await first.ok('list'), []);
  const aside = fs.readdirSync(path.join(dir, 'runtime')).filter((f) => f.startsWith('uc_items.json.corrupt-'));
  t.is(aside.length, 1);
  t.is(fs.readFileSync(path.join(dir, 'runtime', aside[0]), 'utf8'), '{"items": {"unit:g/u": {"status": 1');
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /unreadable/);
  await first.stop();

  fs.writeFileSync(itemsFile(dir), JSON.stringify({ version: 1, items: {
    'unit:g/u': { status: 1, value: 'on', t: 1 },
    'unit:g/bad': { status: 'on' },
    'nonsense': { status: 1, value: null },
  } }));
  const second = await start(t, { dir });
  t.deepEqual((await second.ok('list')).map((i: any) => i.oid), ['unit:g/u']);
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /unit:g\/bad is malformed/);
});

test('a failed write is reported, never crashes, and the next write catches up', async (t) => {
  const dir = makeDir(t, { keysIni: KEYS_INI });
  const c = await start(t, { dir });
  await c.ok('create', { i: 'sensor:g/a' });
  // a folder where the file goes: the rename over it fails
  fs.rmSync(itemsFile(dir));
  fs.mkdirSync(itemsFile(dir));
  const r = await c.client.rpc('create', { k: Keys.master, i: 'sensor:g/b' });
  t.is(r.error?.code, 10);
  t.regex(r.error!.message, /could not be written/);
  // under db_update instant an update is answered once on disk: a failed write answers it with an error
  const u = await c.client.rpc('update', { k: Keys.master, i: 'sensor:g/a', s: 1, v: 'x' });
  t.is(u.error?.code, 10);
  t.regex(u.error!.message, /could not be written/);
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /cannot write/);
  fs.rmdirSync(itemsFile(dir));
  await c.ok('update', { i: 'sensor:g/a', v: 'y' });
  await until('sensor:g/a = y saved', () => fs.existsSync(itemsFile(dir)) && fs.statSync(itemsFile(dir)).isFile() && readItems(dir).items['sensor:g/a']?.value === 'y');
  t.truthy(readItems(dir).items['sensor:g/b'], 'the change that was not written is in the next write');
});
