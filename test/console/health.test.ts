import fs from 'node:fs';
import path from 'node:path';
import { startController, Keys } from '../helpers/controller';
import { browserTest, launch, SHOTS } from '../helpers/chromium';
import { Receiver } from '../helpers/receiver';

const btest = browserTest();

/**
 * What /health says is wrong is on the overview, and each notifier's
 * delivery state is in its table (a web hook that answers 503); a user db that
 * cannot be read (no login works then) is said on the login page.
 */
btest('the overview shows /health degraded (a failing notifier), the notifier table since when it fails, and Test beside it', async (t) => {
  const hook = await Receiver.start(t);
  hook.answer = () => ({ status: 503, body: 'down for maintenance' });
  const notifier = JSON.stringify({ id: 'web1', type: 'json', enabled: true, skip_test: true, uri: hook.uri, retries: 1000,
    events: [{ subject: 'state', types: ['#'], groups: ['#'] }] });
  const { url, client } = await startController(t, { files: { 'runtime/uc_notify.d/web1.json': notifier } });
  const k = { k: Keys.master };
  await client.ok('create', { ...k, i: 'sensor:room/temp' });
  await client.ok('update', { ...k, i: 'sensor:room/temp', s: 1, v: '20.5' });

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#fact-system');
  await page.waitForSelector('#degraded li:has-text("notifier web1: failing since")');
  await page.waitForSelector('#health tr[data-notifier="web1"] td[data-link="failing"]');
  t.regex(await page.locator('#health tr[data-notifier="web1"] td[data-link]').innerText(), /failing since .*HTTP 503: down for maintenance/);
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, 'overview-degraded.png'), fullPage: true });
  // the Test button is beside the state on the overview too (Enable/Disable stay on the notifiers page)
  t.is(await page.locator('#health tr[data-notifier="web1"] button[data-action="toggle"]').count(), 0);
  await page.click('#health tr[data-notifier="web1"] button:has-text("Test")');
  await page.waitForSelector('#status.error:has-text("Test web1:")');
  t.regex(await page.textContent('#status') ?? '', /HTTP 503: down for maintenance/);
});

btest('an unreadable user db: the login page says so (no user can log in), from /health', async (t) => {
  const { url } = await startController(t, { files: { 'runtime/db/uc.db': `SQLite format 3\0${'x'.repeat(2000)}` } });
  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 360, height: 740 } });
  await page.goto(url);
  await page.waitForSelector('#login-degraded li:has-text("user db runtime/db/uc.db cannot be read: dynamic keys and users are refused")');
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, 'login-degraded.png'), fullPage: true });
  t.pass();
});
