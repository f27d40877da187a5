import fs from 'node:fs';
import path from 'node:path';
import { startController, Keys } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stateEvent } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { browserTest, launch, SHOTS } from '../helpers/chromium';

/** The Notifiers page's dead letters: listed per durable notifier, replayed and dropped from the page. Chromium, a real controller, a real receiver. */
const btest = browserTest();
const k = Keys.master;

btest('the overview shows a notifier with dead letters as a warning; notifiers page: a refused frame shows as a dead letter; Replay sends it again under its id, Drop deletes one', async (t) => {
  const rcv = await Receiver.start(t);
  let refuse = true;
  rcv.answer = (r) => (refuse && !r.body.includes('sensor:env/known') ? { status: 422, body: 'unknown sensor' } : { body: '{"result":"OK"}' });
  const { url, client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, max_batch: 1, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/first')] });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/second')] });
  await until('two dead letters', async () => (await client.ok('list_dead_letters', { k, i: 'hook' })).length === 2);
  // the next frame goes through: the notifier delivers (no longer failing), its two letters wait
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/known')] });
  await until('delivering again', async () => (await client.ok('get_notifier', { k, i: 'hook' })).stats.sent === 1);

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(url);
  await page.fill('#login-key', k);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on');
  // the overview (a master key lands there): delivering, and yet a warning, not "ok"
  const delivery = page.locator('#health tr[data-notifier="hook"] td[data-link]');
  await page.waitForSelector('#health tr[data-notifier="hook"] td[data-link="warning"].warn');
  t.is(await delivery.innerText(), 'warning: 2 dead letters');
  t.is(await page.locator('#degraded li').count(), 0, 'dead letters do not make the controller degraded');
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, 'overview-dead-letters.png'), fullPage: true });
  await page.click('nav a[href="#notifiers"]');
  await page.waitForSelector('[data-dead-letters="hook"] h2:has-text("Dead letters of hook: 2")');
  const rows = page.locator('[data-dead-letters="hook"] tr[data-letter]');
  t.is(await rows.count(), 2);
  t.regex(await rows.first().innerText(), /state\s+1\s+\d+\s+422\s+answer HTTP 422: unknown sensor/);
  await page.screenshot({ path: path.join(SHOTS, 'notifiers-dead-letters.png'), fullPage: true });

  refuse = false;
  await rows.first().locator('button:has-text("Replay")').click();
  await page.waitForSelector('#status:has-text("Replay a dead letter (hook): done")');
  await until('first sent again', () => rcv.requests.filter((r) => r.body.includes('sensor:env/first')).length === 2);
  t.is(rcv.requests.at(-1)!.headers['webhook-id'], rcv.requests[0].headers['webhook-id'], 'under the id the receiver saw');
  await page.waitForSelector('[data-dead-letters="hook"] h2:has-text("Dead letters of hook: 1")');

  await page.locator('[data-dead-letters="hook"] tr[data-letter] button:has-text("Drop")').click();
  await page.waitForSelector('#status:has-text("Drop a dead letter (hook): done")');
  await page.waitForSelector('[data-dead-letters="hook"]', { state: 'detached' });
  t.deepEqual(await client.ok('list_dead_letters', { k, i: 'hook' }), []);
  t.false(rcv.requests.slice(2).some((r) => r.body.includes('sensor:env/second')), 'a dropped letter is not sent');
  t.deepEqual(problems, []);
});
