import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { makeDir, startController, Keys } from '../helpers/controller';
import { browserTest, launch } from '../helpers/chromium';

/**
 * What a first-day operator met on the items and cmd pages, in Chromium
 * against a real controller, logged in as a user with a limited key: a
 * unit's on/off switch, and a status field that offers the other state of
 * now (pressing twice does not send the old value); a chart whose history
 * loaded shows no error, though the key cannot list the notifiers; the chart
 * fits a fresh history (every change, up to now) instead of one dot in a
 * day; the cmd page offers no dot-file.
 */
const btest = browserTest();
const WAIT = { timeout: 30_000 };
const FAN = '[data-oid="unit:room/fan"]';
const TEMP = '[data-oid="sensor:room/temp"]';

const history = (id: string) => JSON.stringify({ id, type: 'db', enabled: true, db: 'history.db', keep: 86400, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] });

function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 40[34]/.test(m.text())) problems.push(`console: ${m.text()}`); });
  return problems;
}

/** Wait until the unit's status field offers `value` (a function, not a string: Playwright evals a string predicate while it polls, which the console's CSP refuses). */
const fieldOffers = (page: Page, value: string) => page.waitForFunction(
  (a) => (globalThis as any).document.querySelector(a.sel)?.value === a.value, { sel: `${FAN} input[aria-label="status for unit:room/fan"]`, value }, WAIT);

btest('a unit\'s switch and status field follow it; a limited key\'s chart that loaded has no error and fits a fresh history; cmd hides dot-files', async (t) => {
  const dir = makeDir(t, {
    files: {
      'runtime/uc_notify.d/db_1.json': history('db_1'),
      'xc/cmd/hello': '#!/bin/sh\necho hello\n',
      'xc/cmd/.gitkeep': '',
      'xc/cmd/.hello.swp': 'an editor left it',
    },
  });
  fs.chmodSync(path.join(dir, 'xc', 'cmd', 'hello'), 0o755);
  const { url, client } = await startController(t, { dir });
  const k = { k: Keys.master };
  await client.ok('create_key', { ...k, i: 'room-operator' });
  await client.ok('set_key_prop', { ...k, i: 'room-operator', p: 'allow', v: 'cmd,device' });
  await client.ok('set_key_prop', { ...k, i: 'room-operator', p: 'groups', v: 'room/#' });
  await client.ok('create_user', { ...k, u: 'roomop', p: 'S3cret-pass', a: 'room-operator' });
  await client.ok('create', { ...k, i: 'unit:room/fan' });
  await client.ok('create', { ...k, i: 'sensor:room/temp' });
  // a fresh history: three changes a moment ago
  for (const v of ['20', '21.5', '23']) await client.ok('update', { ...k, i: 'sensor:room/temp', s: 1, v });

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems = watch(page);
  await page.goto(url);
  await page.fill('#login-user', 'roomop');
  await page.fill('#login-password', 'S3cret-pass');
  await page.keyboard.press('Enter');
  await page.waitForSelector(FAN, WAIT);

  // the switch: off, so it offers on; the status field offers 1
  const toggle = `${FAN} button.toggle`;
  await page.waitForSelector(`${toggle}:text-is("Turn on")`, WAIT);
  t.is(await page.getAttribute(toggle, 'aria-pressed'), 'false');
  await fieldOffers(page, '1');
  await page.click(toggle);
  await page.waitForSelector(`${FAN} .status:text-is("1")`, WAIT);
  await page.waitForSelector(`${toggle}:text-is("Turn off")`, WAIT);
  t.is(await page.getAttribute(toggle, 'aria-pressed'), 'true');
  await fieldOffers(page, '0');
  await page.click(toggle);
  await page.waitForSelector(`${FAN} .status:text-is("0")`, WAIT);
  await page.waitForSelector(`${toggle}:text-is("Turn on")`, WAIT);
  // "Run action" twice: each press sends the other state of now, not the value the page opened with
  await fieldOffers(page, '1');
  await page.click(`${FAN} button:has-text("Run action")`);
  await page.waitForSelector(`${FAN} .status:text-is("1")`, WAIT);
  await fieldOffers(page, '0');
  await page.click(`${FAN} button:has-text("Run action")`);
  await page.waitForSelector(`${FAN} .status:text-is("0")`, WAIT);
  const results = (await client.ok('result', { ...k, i: 'unit:room/fan' })) as { nstatus: number; time: { created: number } }[];
  t.deepEqual(results.sort((a, b) => a.time.created - b.time.created).map((r) => r.nstatus), [1, 0, 1, 0]);
  t.is((await client.ok('state', { ...k, i: 'unit:room/fan' })).status, 0);

  // the chart: the key cannot list notifiers, db_1 answered: no error, the default named in grey
  await page.click(`${TEMP} button:has-text("Chart")`);
  await page.waitForSelector('#chart h2[data-range]', WAIT);
  t.is(await page.getAttribute('#chart-note', 'class'), 'muted');
  t.regex(await page.textContent('#chart-note') ?? '', /^Loaded in \d+ ms \(the notifiers cannot be listed with this key .*asking db_1, the default\)\.$/);
  // fitted: every change, from the first to now, in a window of minutes (not one dot in a day)
  t.regex(await page.textContent('#chart h2') ?? '', /\(db_1, every change since .+, [3-9] points\)/);
  const [from, to] = await page.$eval('#chart-plot', (e) => [Number(e.getAttribute('data-from')), Number(e.getAttribute('data-to'))]);
  t.true(to - from >= 300 && to - from < 3600, `a window of minutes: ${to - from} s`);
  const drawn = await page.evaluate<number[]>('chartShown.data[1].filter((v) => v !== null)');
  t.true(drawn.length >= 4, `the changes and now: ${drawn.join(' ')}`);
  t.deepEqual(drawn.slice(-2), [23, 23], 'the last state holds until now');
  // the other ranges are still there, resampled
  await page.selectOption('#chart-range', 'hour');
  await page.waitForSelector('#chart h2:has-text("a point per minute")', WAIT);
  t.is(await page.getAttribute('#chart-note', 'class'), 'muted');

  // the cmd page: scripts, not dot-files
  await page.click('nav a[href="#cmd"]');
  await page.waitForSelector('button[data-cmd="hello"]', WAIT);
  t.deepEqual(await page.$$eval('#cmd-list button', (b) => b.map((x) => x.getAttribute('data-cmd'))), ['hello']);
  t.deepEqual(await page.$$eval('#cmd-names option', (o) => o.map((x) => x.getAttribute('value'))), ['hello']);
  t.deepEqual(problems, []);
});

btest('the default range of a history with more changes than it draws as they are: the shortest range holding the newest, resampled', async (t) => {
  const dir = makeDir(t, { files: { 'runtime/uc_notify.d/db_1.json': history('db_1') } });
  const { url, client } = await startController(t, { dir });
  const k = { k: Keys.master };
  await client.ok('create', { ...k, i: 'sensor:room/temp' });
  // changes within one millisecond replace each other in the history: update until it holds 1000
  const held = async () => (await client.ok('state_history', { ...k, a: 'db_1', i: 'sensor:room/temp', s: '1W', l: 1000 })).t.length;
  for (let i = 0; await held() < 1000;) {
    for (const end = i + 250; i < end; i++) await client.ok('update', { ...k, i: 'sensor:room/temp', s: 1, v: String(i % 50) });
  }
  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems = watch(page);
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on', WAIT);
  await page.click('nav a[href="#items"]');
  await page.click(`${TEMP} button:has-text("Chart")`);
  await page.waitForSelector('#chart h2[data-range]', WAIT);
  t.is(await page.inputValue('#chart-range'), 'fit');
  t.regex(await page.textContent('#chart h2') ?? '', /\(db_1, last hour, a point per minute, \d+ points?\)/);
  t.regex(await page.textContent('#chart-note') ?? '', /^Loaded in \d+ ms\.$/);
  t.deepEqual(problems, []);
});
