import 'reflect-metadata';
import test from 'ava';
import path from 'node:path';
import http from 'node:http';
import fs from 'node:fs';
import { execFile } from 'node:child_process';
import { PAGE_CHUNK } from '../../plugins/notifiers/prometheus/page';
import { Keys, makeDir, startController } from '../helpers/controller';
import { controllerLog, notifierFiles, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;
const everything = [{ subject: 'state', types: ['#'], groups: ['#'] }];

interface Family { help?: string; type?: string; samples: Map<string, number> }

/**
 * A parser of the text format, strict where Prometheus is: metric names,
 * at most one HELP and TYPE per family, before its samples, no sample
 * twice, values Go's ParseFloat reads. Throws on anything else.
 */
function parseExposition(text: string): Map<string, Family> {
  const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  const VALUE = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf|NaN)$/;
  const out = new Map<string, Family>();
  const fam = (name: string) => {
    if (!NAME.test(name)) throw new Error(`bad metric name ${JSON.stringify(name)}`);
    let f = out.get(name);
    if (!f) out.set(name, (f = { samples: new Map() }));
    return f;
  };
  if (!text.endsWith('\n')) throw new Error('the page must end with a line feed');
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      const f = fam(meta[2]);
      if (f.samples.size) throw new Error(`${meta[1]} of ${meta[2]} after its samples`);
      const key = meta[1] === 'HELP' ? 'help' : 'type';
      if (f[key] !== undefined) throw new Error(`second ${meta[1]} of ${meta[2]}`);
      f[key] = meta[1] === 'HELP' ? meta[3].replace(/\\n/g, '\n').replace(/\\\\/g, '\\') : meta[3];
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^(\S+) (\S+)$/.exec(line);
    if (!m) throw new Error(`bad line ${JSON.stringify(line)}`);
    const f = fam(m[1]);
    if (f.samples.has(m[1])) throw new Error(`${m[1]} twice`);
    if (!VALUE.test(m[2])) throw new Error(`bad value ${m[2]}`);
    f.samples.set(m[1], m[2] === 'NaN' ? NaN : m[2].endsWith('Inf') ? (m[2].startsWith('-') ? -Infinity : Infinity) : Number(m[2]));
  }
  return out;
}

/** name -> value of every sample of the page */
function samples(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, f] of parseExposition(text)) for (const [n, v] of f.samples) out[n] = v;
  return out;
}

async function scrape(url: string, id: string, headers: Record<string, string> = {}, method = 'GET') {
  const r = await fetch(`${url}/ns/${id}/metrics`, { method, headers });
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

const basic = (user: string, password: string) => ({ Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

test('the subscribed items are gauges named as 3.3 names them, read at each scrape', async (t) => {
  const { url, client } = await startController(t, {
    files: notifierFiles({
      prom: { type: 'prometheus', events: [{ subject: 'state', types: ['sensor', 'unit'], groups: ['env/#', 'plant'] }] },
    }),
  });
  for (const i of ['sensor:env/temp1', 'sensor:env/room/hum', 'unit:plant/pump', 'sensor:env/text', 'sensor:other/x', 'lvar:env/l']) {
    await client.ok('create', { k, i });
  }
  await client.ok('update', { k, i: 'sensor:env/temp1', s: 1, v: '22.5' });
  await client.ok('update', { k, i: 'sensor:env/room/hum', s: 1, v: ' 1_000 ' });
  await client.ok('update', { k, i: 'sensor:env/text', s: 2, v: 'open' });
  await client.ok('update', { k, i: 'sensor:other/x', s: 1, v: '5' });
  const r = await scrape(url, 'prom');
  t.is(r.status, 200);
  t.is(r.type, 'text/plain; version=0.0.4; charset=utf-8');
  const page = parseExposition(r.text);
  t.deepEqual(samples(r.text), {
    'sensor:env:temp1:status': 1, 'sensor:env:temp1:value': 22.5,
    'sensor:env:room:hum:status': 1, 'sensor:env:room:hum:value': 1000,
    'unit:plant:pump:status': 0, 'unit:plant:pump:value': NaN, // no value: NaN, as 3.3
    'sensor:env:text:status': 2, // a value that is no number: no value sample, as 3.3
  });
  for (const [name, f] of page) t.is(f.type, 'gauge', name);
  // the page is read at the scrape: no event delivery in between
  await client.ok('update', { k, i: 'sensor:env/temp1', v: '-1e3' });
  await client.ok('update', { k, i: 'sensor:env/text', v: 'inf' });
  const again = samples((await scrape(url, 'prom')).text);
  t.is(again['sensor:env:temp1:value'], -1000);
  t.is(again['sensor:env:text:value'], Infinity);
  await client.ok('destroy', { k, i: 'sensor:env/temp1' });
  t.false('sensor:env:temp1:status' in samples((await scrape(url, 'prom')).text));
  t.is((await scrape(url, 'prom', {}, 'HEAD')).status, 200);
  t.is((await scrape(url, 'prom', {}, 'POST')).status, 405);
  t.like(await stats(client, k, 'prom'), { scrapes: 4, page_items: 3 });
});

test('username and password ask for basic auth: without them or wrong, 403 as 3.3; never shown', async (t) => {
  const { url, client, dir } = await startController(t, {
    files: notifierFiles({ prom: { type: 'prometheus', username: 'scraper', password: 'pa:ss wörd', events: everything } }),
  });
  await client.ok('create', { k, i: 'sensor:env/temp1' });
  await client.ok('update', { k, i: 'sensor:env/temp1', s: 1, v: '3' });
  // none, wrong password, wrong user, the password with a blank more (only the user name is trimmed),
  // another scheme, no base64, no colon
  for (const headers of [{}, basic('scraper', 'wrong'), basic('other', 'pa:ss wörd'), basic('scraper', 'pa:ss wörd '),
    { Authorization: 'Bearer x' }, { Authorization: 'Basic %%%' }, { Authorization: `Basic ${Buffer.from('scraper').toString('base64')}` }]) {
    const r = await scrape(url, 'prom', headers);
    t.is(r.status, 403, JSON.stringify(headers));
    t.false(r.text.includes('sensor'));
  }
  const ok = await scrape(url, 'prom', basic('scraper', 'pa:ss wörd'));
  t.is(ok.status, 200);
  t.is(samples(ok.text)['sensor:env:temp1:value'], 3);
  // 3.3 trims the user name, and takes the scheme in any case
  const loose = await scrape(url, 'prom', { Authorization: `bAsIc ${Buffer.from(' scraper :pa:ss wörd').toString('base64')}` });
  t.is(loose.status, 200);
  const shown = await client.ok('get_notifier', { k, i: 'prom' });
  t.is(shown.username, 'scraper');
  t.is(shown.password, '<hidden>');
  t.like(shown.stats, { refused: 7, scrapes: 2 });
  t.false(JSON.stringify(await client.ok('list_notifiers', { k })).includes('wörd'));
  t.false(controllerLog(dir).includes('wörd'));
});

test('after a restart the page has every covered item with its stored state, updated since or not', async (t) => {
  const dir = makeDir(t, { files: notifierFiles({ prom: { type: 'prometheus', events: everything } }) });
  const first = await startController(t, { dir });
  await first.client.ok('create', { k, i: 'sensor:env/temp1' });
  await first.client.ok('create', { k, i: 'lvar:ops/mode' });
  await first.client.ok('update', { k, i: 'sensor:env/temp1', s: 1, v: '19.25' });
  await first.client.ok('update', { k, i: 'lvar:ops/mode', s: 1, v: '2' });
  await first.stop();
  const second = await startController(t, { dir });
  t.deepEqual(samples((await scrape(second.url, 'prom')).text), {
    'sensor:env:temp1:status': 1, 'sensor:env:temp1:value': 19.25, 'lvar:ops:mode:status': 1, 'lvar:ops:mode:value': 2,
  });
});

test('names with . and - become valid metric names; a second item of the same name is left out and counted', async (t) => {
  const { url, client } = await startController(t, { files: notifierFiles({ prom: { type: 'prometheus', events: everything } }) });
  for (const i of ['sensor:room-1/t.1', 'sensor:room_1/t_1', 'sensor:room.1/t-2']) await client.ok('create', { k, i });
  const r = await scrape(url, 'prom');
  const got = samples(r.text);
  t.deepEqual(Object.keys(got).sort(), ['sensor:room_1:t_1:status', 'sensor:room_1:t_1:value', 'sensor:room_1:t_2:status', 'sensor:room_1:t_2:value']);
  t.is(got['sensor:room_1:t_1:status'], 0);
  t.like(await stats(client, k, 'prom'), { page_items: 2, name_clashes: 1 });
});

test('max_items bounds the page: the items past it are left out, counted and logged once', async (t) => {
  const { url, client, dir } = await startController(t, { files: notifierFiles({ prom: { type: 'prometheus', max_items: 2, events: everything } }) });
  for (const i of ['sensor:g/a', 'sensor:g/b', 'sensor:g/c']) await client.ok('create', { k, i });
  t.deepEqual(Object.keys(samples((await scrape(url, 'prom')).text)).length, 4);
  t.deepEqual(Object.keys(samples((await scrape(url, 'prom')).text)).length, 4);
  t.like(await stats(client, k, 'prom'), { page_items: 2, left_out: 1 });
  t.is(controllerLog(dir).split('past max_items 2').length - 1, 1);
});

test('a page of thousands of items goes out in pieces and parses', async (t) => {
  const { url, client } = await startController(t, { files: notifierFiles({ prom: { type: 'prometheus', events: everything } }) });
  const n = 1500; // ~200 KB: several pieces of PAGE_CHUNK
  // 100 calls at a time: 1,500 connections at once overflow the listen backlog on a loaded machine
  for (let i = 0; i < n; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => client.ok('create', { k, i: `sensor:bulk/s${i + j}` })));
  }
  const r = await scrape(url, 'prom');
  t.true(r.text.length > 2 * PAGE_CHUNK);
  t.is(Object.keys(samples(r.text)).length, 2 * n);
  // a client that goes away after the first piece: the page stops, the next scrape is whole
  await new Promise<void>((resolve, reject) => {
    const req = http.get(`${url}/ns/prom/metrics`, (res) => res.once('data', () => { req.destroy(); resolve(); }));
    req.on('error', (err) => (req.destroyed ? resolve() : reject(err)));
  });
  t.is(Object.keys(samples((await scrape(url, 'prom')).text)).length, 2 * n);
  t.is((await stats(client, k, 'prom')).scrapes, 3);
});

test('no state subscription: an empty page; disabled, unknown or another type: 404', async (t) => {
  const { url, client } = await startController(t, {
    files: notifierFiles({
      prom: { type: 'prometheus', events: [{ subject: 'log', level: 20 }] },
      off: { type: 'prometheus', enabled: false, events: everything },
      hook: { type: 'json', uri: 'http://127.0.0.1:9/', skip_test: true, events: everything },
    }),
  });
  await client.ok('create', { k, i: 'sensor:env/temp1' });
  const empty = await scrape(url, 'prom');
  t.is(empty.status, 200);
  t.is(empty.text, '\n');
  for (const id of ['off', 'hook', 'nosuch']) t.is((await scrape(url, id)).status, 404, id);
  await client.ok('enable_notifier', { k, i: 'off' });
  t.is(samples((await scrape(url, 'off')).text)['sensor:env:temp1:status'], 0);
  await client.ok('disable_notifier', { k, i: 'off' });
  t.is((await scrape(url, 'off')).status, 404);
  t.is((await client.ok('list_notifiers', { k })).find((n: any) => n.id === 'prom').type, 'prometheus');
});

const BIN = path.resolve(__dirname, '..', '..', 'plugins', 'notifiers', 'cli', 'notifier-bin.js');
const cli = (args: string[]) => new Promise<{ code: number; out: string; err: string }>((resolve) => {
  execFile(process.execPath, [BIN, ...args], { timeout: 60_000 }, (error, out, err) => {
    resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, out, err });
  });
});

test('the command line creates one as 3.3 did (prometheus:), then sets the credentials; the controller serves it', async (t) => {
  const dir = makeDir(t);
  t.is((await cli(['--dir', dir, 'create', '-y', 'pr1', 'prometheus:user:secret'])).code, 1);
  for (const args of [['create', '-y', 'pr1', 'prometheus:'], ['set', 'pr1', 'username', 'prometheus'], ['set', 'pr1', 'password', '123'],
    ['subscribe', 'state', 'pr1', '-v', '#', '-g', '#']]) {
    const r = await cli(['--dir', dir, ...args]);
    t.is(r.code, 0, `${args.join(' ')}: ${r.err}`);
  }
  const file = JSON.parse(fs.readFileSync(path.join(dir, 'runtime', 'uc_notify.d', 'pr1.json'), 'utf8'));
  t.like(file, { id: 'pr1', type: 'prometheus', enabled: true, username: 'prometheus', password: '123' });
  const listed = await cli(['--dir', dir, 'list']);
  t.true(listed.out.includes('/ns/pr1/metrics'));
  t.false(listed.out.includes('123'));
  const { url, client } = await startController(t, { dir });
  await client.ok('create', { k, i: 'sensor:env/hum1_int' });
  t.is((await scrape(url, 'pr1')).status, 403);
  t.is(samples((await scrape(url, 'pr1', basic('prometheus', '123'))).text)['sensor:env:hum1_int:status'], 0);
});

test('a notifier file as 3.3 wrote it (credentials null, no timeout) is served without credentials', async (t) => {
  const file = {
    id: 'pr1', type: 'prometheus', events: [{ groups: ['#'], types: ['#'], subject: 'state' }],
    skip_test: null, enabled: true, username: null, password: null,
  };
  const { url, client } = await startController(t, { files: { 'runtime/uc_notify.d/pr1.json': JSON.stringify(file, null, 4) } });
  await client.ok('create', { k, i: 'unit:plant/pump' });
  await client.ok('update', { k, i: 'unit:plant/pump', s: 1, v: '0.75' });
  t.deepEqual(samples((await scrape(url, 'pr1')).text), { 'unit:plant:pump:status': 1, 'unit:plant:pump:value': 0.75 });
});

test('wrong credentials are throttled per address as wrong API keys are ([webapi] login_*)', async (t) => {
  const { url, client } = await startController(t, {
    ini: { webapi: { login_free_failures: 0, login_delay: 10, login_delay_max: 10, login_pending_max: 1 } },
    files: notifierFiles({ prom: { type: 'prometheus', username: 'u', password: 'p', events: everything } }),
  });
  const right = basic('u', 'p');
  t.is((await scrape(url, 'prom', right)).status, 200);
  // a first wrong guess: booked one step ahead, its answer held until then
  const started = Date.now();
  const wrong = scrape(url, 'prom', basic('u', 'guess'));
  await until('the guess counted', async () => (await stats(client, k, 'prom')).refused === 1, 15_000);
  // meanwhile the address is refused unchecked, even with the right credentials
  t.is((await scrape(url, 'prom', right)).status, 403);
  t.is((await wrong).status, 403);
  t.true(Date.now() - started >= 9_000, 'the wrong answer was held back');
  // the step is over: the right credentials pass again
  t.is((await scrape(url, 'prom', right)).status, 200);
});
