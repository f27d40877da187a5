import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { makeDir, startController, Keys } from '../helpers/controller';
import { until } from '../helpers/wait';
import { browserTest, fitsPhone, launch, SHOTS } from '../helpers/chromium';

/**
 * The console as an operator's tool, in Chromium against a real controller:
 * control from the items page, the history chart from whichever notifier
 * holds it, the pages and controls a key's rights allow, locks and command
 * scripts that exist, the overview in words, and every page at 1280×800 and
 * 360×740 (screenshots in SHOTS).
 */
const btest = browserTest();
const WAIT = { timeout: 30_000 };
const Sizes = { wide: { width: 1280, height: 800 }, phone: { width: 360, height: 740 } };

const history = (id: string) => JSON.stringify({ id, type: 'db', enabled: true, db: 'history.db', keep: 86400, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] });

/** Watch a page for script errors and CSP refusals. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 40[34]/.test(m.text())) problems.push(`console: ${m.text()}`); });
  return problems;
}

async function shots(t: { log(s: string): void; deepEqual(a: unknown, b: unknown, m?: string): void }, page: Page, name: string, ready: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  for (const [size, viewport] of Object.entries(Sizes)) {
    await page.setViewportSize(viewport);
    await page.waitForSelector(ready, WAIT);
    await page.screenshot({ path: path.join(SHOTS, `${name}-${size}.png`), fullPage: true });
    if (size === 'phone') t.deepEqual(await fitsPhone(page), [], `${name} at 360×740`);
  }
  await page.setViewportSize(Sizes.wide);
}

btest('operator: unit action with its progress, value set, cards with age and sparkline, history chart from the notifier that holds it, locks and scripts that exist, both sizes', async (t) => {
  const dir = makeDir(t, {
    files: {
      'runtime/uc_notify.d/hist.json': history('hist'),
      'xc/cmd/hello': '#!/bin/sh\necho "hello $1"\n',
      'xc/cmd/report-with-a-long-name-for-phones': '#!/bin/sh\necho ok\n',
      // the unit's action script: a moment of running, then the state it was asked
      'xc/uc/hall': '#!/bin/sh\nsleep 0.3\nexit 0\n',
    },
  });
  fs.chmodSync(path.join(dir, 'xc', 'cmd', 'hello'), 0o755);
  fs.chmodSync(path.join(dir, 'xc', 'cmd', 'report-with-a-long-name-for-phones'), 0o755);
  fs.chmodSync(path.join(dir, 'xc', 'uc', 'hall'), 0o755);
  const { url, client } = await startController(t, { dir });
  const k = { k: Keys.master };
  await client.ok('create', { ...k, i: 'unit:lights/hall' });
  await client.ok('create', { ...k, i: 'sensor:building/floor1/room/temperature-with-a-long-id' });
  await client.ok('create', { ...k, i: 'lvar:modes/night' });
  for (const v of ['20.5', '21', '22.5', '21.7']) await client.ok('update', { ...k, i: 'sensor:building/floor1/room/temperature-with-a-long-id', s: 1, v });
  await client.ok('lock', { ...k, l: 'boiler', e: 600 });
  await client.ok('lock', { ...k, l: 'pump' });
  await client.ok('log_warning', { ...k, m: 'a log record with a long message that must wrap on a narrow screen: /opt/controller/runtime/some/deep/file/path' });
  await until('the history written', async () => (await client.ok('get_notifier', { ...k, i: 'hist' })).stats?.sent >= 4, 20_000);

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: Sizes.wide });
  const problems = watch(page);
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on', WAIT);

  // overview: values in words, a Save that says what it saves
  await page.waitForSelector('#fact-db_update', WAIT);
  t.regex(await page.textContent('#fact-db_update') ?? '', /^(instant|on exit|manual \(on save\))$/);
  t.regex(await page.textContent('#fact-setup_mode') ?? '', /^(on|off)$/);
  t.is((await page.textContent('#save'))?.trim(), 'Save items and state to disk');
  await shots(t, page, 'overview', '#health [data-notifier="hist"]');

  // items: a card per item with status, value, age; the sensor's sparkline from the history
  await page.click('nav a[href="#items"]');
  const sensor = '[data-oid="sensor:building/floor1/room/temperature-with-a-long-id"]';
  await page.waitForSelector(`${sensor} .value:text-is("21.7")`, WAIT);
  t.regex(await page.textContent(`${sensor} .age`) ?? '', /\d+ (s|min) ago/);
  await page.waitForSelector(`${sensor} canvas.spark:not([hidden])`, WAIT);
  t.true(await page.isHidden('[data-oid="lvar:modes/night"] canvas.spark'), 'no sparkline without numbers in the history');
  // the sparkline goes on with the stream
  const spark = () => page.$eval(`${sensor} canvas.spark`, (c) => (c as unknown as { toDataURL(): string }).toDataURL());
  const drawn = await spark();
  await client.ok('update', { ...k, i: 'sensor:building/floor1/room/temperature-with-a-long-id', v: '30' });
  await page.waitForSelector(`${sensor} .value:text-is("30")`, WAIT);
  t.not(await spark(), drawn, 'a new value redraws the sparkline');

  // a unit action: its progress from the stream's action events, to completed
  const unit = '[data-oid="unit:lights/hall"]';
  await page.fill(`${unit} input[aria-label="status for unit:lights/hall"]`, '1');
  await page.fill(`${unit} input[aria-label="value for unit:lights/hall"]`, 'on');
  const seen: string[] = [];
  await page.exposeFunction('sawStatus', (s: string) => { if (seen[seen.length - 1] !== s) seen.push(s); });
  await page.evaluate(`new MutationObserver(() => { const s = document.querySelector('${unit} .progress').dataset.status; if (s) window.sawStatus(s); })
    .observe(document.querySelector('${unit} .progress'), { attributes: true, childList: true, characterData: true, subtree: true })`);
  await page.click(`${unit} button:has-text("Run action")`);
  await page.waitForSelector(`${unit} .progress:text-is("Action completed")`, WAIT);
  t.true(seen.includes('running'), `the progress showed running on the way: ${seen.join(', ')}`);
  t.like(await client.ok('state', { ...k, i: 'unit:lights/hall' }), { status: 1, value: 'on' });
  await page.waitForSelector(`${unit} .status:text-is("1")`);
  // a failing action says so, with the script's exit code
  fs.writeFileSync(path.join(dir, 'xc', 'uc', 'hall'), '#!/bin/sh\necho "relay stuck" >&2\nexit 4\n');
  await page.fill(`${unit} input[aria-label="status for unit:lights/hall"]`, '0');
  await page.fill(`${unit} input[aria-label="value for unit:lights/hall"]`, '');
  await page.click(`${unit} button:has-text("Run action")`);
  await page.waitForSelector(`${unit} .progress.error:has-text("Action failed, exit code 4: relay stuck")`, WAIT).catch(async (e) => { t.log(await page.textContent(`${unit} .progress`)); throw e; });

  // an lvar's value set from its card
  await page.fill('[data-oid="lvar:modes/night"] input[aria-label="new value of lvar:modes/night"]', 'yes');
  await page.click('[data-oid="lvar:modes/night"] button:has-text("Set value")');
  await page.waitForSelector('[data-oid="lvar:modes/night"] .value:text-is("yes")', WAIT);
  t.like(await client.ok('state', { ...k, i: 'lvar:modes/night' }), { value: 'yes' });

  // the chart: the history notifiers listed, asked with a=, ranges with the server's resampling
  await page.click(`${sensor} button:has-text("Chart")`);
  await page.waitForSelector('#chart .uplot canvas', WAIT);
  t.deepEqual(await page.$$eval('#chart-source option', (o) => o.map((x) => x.getAttribute('value'))), ['hist']);
  t.regex(await page.textContent('#chart h2') ?? '', /\(hist, every change since .+, \d+ points?\)/);
  t.regex(await page.textContent('#chart-note') ?? '', /^Loaded in \d+ ms\.$/);
  for (const [range, step, span] of [['hour', 'minute', 3600], ['week', 'hour', 7 * 86400]] as const) {
    await page.selectOption('#chart-range', range);
    await page.waitForSelector(`#chart h2:has-text("a point per ${step}")`, WAIT);
    const w = await page.$eval('#chart-plot', (e) => Number(e.getAttribute('data-to')) - Number(e.getAttribute('data-from')));
    t.true(Math.abs(w - span) < 5, `the x axis spans the ${range}: ${w} s`);
  }
  await shots(t, page, 'items', `${sensor} canvas.spark:not([hidden])`);

  // locks that exist, with when a hold ends
  await page.click('nav a[href="#locks"]');
  await page.waitForSelector('tr[data-lock="boiler"]', WAIT);
  t.regex(await page.textContent('tr[data-lock="boiler"]') ?? '', /locked.*\(in \d+ s\)/);
  t.regex(await page.textContent('tr[data-lock="pump"]') ?? '', /locked.*at unlock/);
  await shots(t, page, 'locks', 'tr[data-lock="pump"]');

  // the scripts cmd may run, one click from the form
  await page.click('nav a[href="#cmd"]');
  await page.click('button[data-cmd="hello"]', WAIT);
  t.is(await page.inputValue('#cmd-name'), 'hello');
  await page.fill('#cmd-args', 'there');
  await page.click('form:has(#cmd-name) button:has-text("Run")');
  await page.waitForSelector('#cmd-out pre:has-text("hello there")', WAIT);
  await shots(t, page, 'cmd', '#cmd-out pre');

  const ready: Record<string, string> = { keys: 'tr[data-key]', users: 'h1', notifiers: 'tr[data-notifier="hist"]', log: '#log-rows td:has-text("long message")', cvars: 'h1' };
  for (const [name, sel] of Object.entries(ready)) {
    await page.click(`nav a[href="#${name}"]`);
    await shots(t, page, name, `[data-page="${name}"] ${sel}`);
  }
  // at 1280 a log time stays on one line
  await page.click('nav a[href="#log"]');
  await page.waitForSelector('#log-rows td', WAIT);
  const lines = await page.evaluate<number>("(() => { const r = document.createRange(); r.selectNodeContents(document.querySelector('#log-rows td')); return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size; })()");
  t.is(lines, 1, 'the log time does not wrap');
  t.deepEqual(problems, [], 'no script errors and no CSP refusals');
  t.log(`screenshots in ${SHOTS}`);
});

btest('a limited key (allow=cmd, one group) sees only its pages and controls, lands on a page that works, and is told which right a refusal lacked', async (t) => {
  const dir = makeDir(t, { files: { 'xc/cmd/hello': '#!/bin/sh\necho hello\n' } });
  fs.chmodSync(path.join(dir, 'xc', 'cmd', 'hello'), 0o755);
  const { url, client } = await startController(t, { dir });
  const k = { k: Keys.master };
  await client.ok('create_key', { ...k, i: 'room-operator' });
  await client.ok('set_key_prop', { ...k, i: 'room-operator', p: 'allow', v: 'cmd' });
  await client.ok('set_key_prop', { ...k, i: 'room-operator', p: 'groups', v: 'room/#' });
  await client.ok('set_key_prop', { ...k, i: 'room-operator', p: 'items_ro', v: 'sensor:outside/out_temp' });
  await client.ok('create_user', { ...k, u: 'roomop', p: 'S3cret-pass', a: 'room-operator' });
  for (const i of ['sensor:room/temp', 'unit:room/fan', 'sensor:outside/out_temp', 'sensor:cellar/hidden']) await client.ok('create', { ...k, i });
  await client.ok('update', { ...k, i: 'sensor:room/temp', v: '20' });

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: Sizes.wide });
  const problems = watch(page);
  await page.goto(url);
  await page.fill('#login-user', 'roomop');
  await page.fill('#login-password', 'S3cret-pass');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on', WAIT);

  // lands on the items page, which works: no refusal on the screen
  await page.waitForSelector('[data-page="items"] [data-oid="sensor:room/temp"]', WAIT);
  t.is(await page.textContent('#status'), '');
  const menu = await page.$$eval('#nav a', (as) => as.filter((a) => !a.hidden).map((a) => a.getAttribute('href')));
  t.deepEqual(menu, ['#overview', '#history', '#items', '#cmd']);
  t.deepEqual(await page.$$eval('[data-oid]', (e) => e.map((x) => x.getAttribute('data-oid')).sort()), ['sensor:outside/out_temp', 'sensor:room/temp', 'unit:room/fan']);
  // a value it may write: set; a read-only item and a unit without allow=device: the right it lacks, no form
  t.true(await page.isVisible('[data-oid="sensor:room/temp"] button:has-text("Set value")'));
  t.regex(await page.textContent('[data-oid="sensor:outside/out_temp"] .lacks') ?? '', /needs write access to sensor:outside\/out_temp/);
  t.regex(await page.textContent('[data-oid="unit:room/fan"] .lacks') ?? '', /needs a key whose allow has device/);
  t.is(await page.locator('[data-oid="unit:room/fan"] form').count(), 0);
  await page.fill('[data-oid="sensor:room/temp"] input[aria-label="new value of sensor:room/temp"]', '23');
  await page.click('[data-oid="sensor:room/temp"] button:has-text("Set value")');
  await page.waitForSelector('[data-oid="sensor:room/temp"] .value:text-is("23")', WAIT);
  // the chart: it cannot list notifiers, and says so, with what db_1 answered
  await page.click('[data-oid="sensor:room/temp"] button:has-text("Chart")');
  await page.waitForSelector('#chart .uplot canvas', WAIT);
  t.regex(await page.textContent('#chart-note') ?? '', /list_notifiers needs a master key.*db_1 answered Not found/);
  await shots(t, page, 'limited-items', '#chart .uplot canvas');

  // the overview: facts only, no debug switch, no save, no notifier table
  await page.click('nav a[href="#overview"]');
  await page.waitForSelector('#fact-system', WAIT);
  t.is(await page.locator('#debug, #save, #health').count(), 0);
  await shots(t, page, 'limited-overview', '#fact-system');
  await page.click('nav a[href="#cmd"]');
  await page.waitForSelector('button[data-cmd="hello"]', { timeout: 5000 }).catch(async (e) => { t.log(await page.textContent('#page'), await page.textContent('#status')); throw e; });

  // a page it may not use, opened by its address: what it needs, not a red refusal of a call
  await page.goto(`${url}/#keys`);
  await page.waitForSelector('[data-page="keys"] p.error:has-text("This page needs a master key")', WAIT);
  t.is(await page.locator('#new-key-id').count(), 0, 'no create form');
  // a refused call names the right it lacked
  const said = await page.evaluate<string>("api('list_keys').then(() => 'allowed', (e) => words(e))");
  t.regex(said, /^Access denied: .*list_keys needs a master key$/);
  t.deepEqual(problems, []);
});

btest('without a history notifier the chart says so; one point gets a window around it', async (t) => {
  const { url, client } = await startController(t);
  const k = { k: Keys.master };
  await client.ok('create', { ...k, i: 'sensor:room/t' });
  const browser = await launch(t);
  const page = await browser.newPage({ viewport: Sizes.wide });
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on', WAIT);
  await page.click('nav a[href="#items"]');
  await page.waitForSelector('[data-oid="sensor:room/t"]', WAIT);
  await client.ok('update', { ...k, i: 'sensor:room/t', v: '5' });
  await page.waitForSelector('[data-oid="sensor:room/t"] .value:text-is("5")', WAIT);
  await page.click('[data-oid="sensor:room/t"] button:has-text("Chart")');
  await page.waitForSelector('#chart .uplot canvas', WAIT);
  t.regex(await page.textContent('#chart-note') ?? '', /no history notifier/);
  t.regex(await page.textContent('#chart h2') ?? '', /seen since this page opened, \d+ points?\)/);
  const [from, to] = await page.$eval('#chart-plot', (e) => [Number(e.getAttribute('data-from')), Number(e.getAttribute('data-to'))]);
  const now = Date.now() / 1000;
  t.true(to - from >= 300 && to - from < 3600, `a window of minutes: ${to - from} s`);
  t.true(to <= now + 1 && to > now - 60, 'ending now');
});

btest('the menu and the landing page follow each key\'s rights: master, sysfunc with allow, none', async (t) => {
  const { url } = await startController(t);
  const browser = await launch(t);
  const cases: [string, string, string[]][] = [
    [Keys.master, 'overview', ['#overview', '#keys', '#users', '#notifiers', '#log', '#history', '#items', '#cvars', '#locks', '#cmd']],
    [Keys.ops, 'overview', ['#overview', '#log', '#history', '#items', '#locks', '#cmd']], // sysfunc, allow cmd/lock/device, groups #
    // no right at all: the overview's facts and its own calls, nothing that would be refused
    [Keys.plain, 'overview', ['#overview', '#history']],
  ];
  for (const [key, landing, menu] of cases) {
    const page = await browser.newPage({ viewport: Sizes.wide });
    const problems = watch(page);
    await page.goto(url);
    await page.fill('#login-key', key);
    await page.keyboard.press('Enter');
    await page.waitForSelector(`[data-page="${landing}"] #fact-system`, WAIT);
    t.deepEqual(await page.$$eval('#nav a', (as) => as.filter((a) => !a.hidden).map((a) => a.getAttribute('href'))), menu);
    t.is(await page.locator('#debug').count(), key === Keys.master ? 1 : 0, 'debug: master only');
    t.is(await page.locator('#save').count(), key === Keys.plain ? 0 : 1, 'save: sysfunc');
    // every page in its menu opens without a refusal
    for (const href of menu) {
      await page.click(`nav a[href="${href}"]`);
      await page.waitForSelector(`[data-page="${href.slice(1)}"] h1`, WAIT);
      await page.waitForLoadState('networkidle');
      t.is(await page.textContent('#status'), '', `${href} with key ${key.slice(0, 6)}…`);
    }
    t.deepEqual(problems, []);
    await page.close();
  }
});
