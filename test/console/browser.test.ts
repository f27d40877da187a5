import fs from 'node:fs';
import path from 'node:path';
import { startController, Keys } from '../helpers/controller';
import { browserTest, launch, SHOTS } from '../helpers/chromium';

const btest = browserTest();

btest('the console in Chromium: login, keys, live log, notifiers, items chart, every page', async (t) => {
  const notifier = JSON.stringify({ id: 'web1', type: 'json', enabled: true, skip_test: true, uri: 'http://127.0.0.1:9/', events: [{ subject: 'state', types: ['#'], groups: ['#'] }] });
  const { url, client } = await startController(t, { files: { 'runtime/uc_notify.d/web1.json': notifier } });
  const k = { k: Keys.master };
  await client.ok('create_user', { ...k, u: 'operator', p: 'S3cret-pass', a: 'masterkey' });
  await client.ok('create', { ...k, i: 'sensor:room/temp' });
  await client.ok('update', { ...k, i: 'sensor:room/temp', s: 1, v: '20.5' });

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  const requested: string[] = [];
  page.on('request', (r) => requested.push(r.url()));
  fs.mkdirSync(SHOTS, { recursive: true });
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

  await page.goto(url);
  await page.fill('#login-user', 'operator');
  await page.fill('#login-password', 'wrong');
  await page.click('#login-form button');
  await page.waitForSelector('#login-error:has-text("Wrong user, password or key")');
  await page.fill('#login-password', 'S3cret-pass');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#fact-system:has-text("testhost")');
  await page.waitForSelector('#live.on');
  await page.waitForSelector('#health [data-notifier="web1"]');
  await shot('overview');
  const stored = await page.evaluate<{ token: string | null; cookie: string }>("({ token: sessionStorage.getItem('console.token'), cookie: document.cookie })");
  t.regex(stored.token ?? '', /^token:[0-9a-f]{64}$/);
  t.is(stored.cookie, '');

  // keys: create one and see it listed
  await page.click('nav a[href="#keys"]');
  await page.fill('#new-key-id', 'console1');
  await page.click('text=Create');
  await page.waitForSelector('tr[data-key="console1"]');
  t.true(await page.isVisible('.secret'), 'the new value is shown once');
  t.truthy((await client.ok('list_keys', k)).find((x: any) => x.key_id === 'console1'));
  await shot('keys');

  // log: a record written through the API appears in the live tail, brought by the stream: the page asks
  // log_get nothing more after its history (a loaded machine may starve the browser for a while, so the
  // wait is not what proves it)
  await page.click('nav a[href="#log"]');
  await page.waitForSelector('#log-rows tr');
  const asked: string[] = [];
  const onRequest = (r: { postData(): string | null }) => { if (r.postData()?.includes('"log_get"')) asked.push(r.postData()!); };
  page.on('request', onRequest);
  await client.ok('log_warning', { ...k, m: 'written through the API 7431' });
  const t0 = Date.now();
  await page.waitForSelector('#log-rows td:has-text("written through the API 7431")', { timeout: 30_000 });
  t.log(`log record in the live tail after ${Date.now() - t0} ms`);
  page.off('request', onRequest);
  t.deepEqual(asked, [], 'by the stream, not by asking again');
  await page.fill('#log-search', 'no such text anywhere');
  t.is(await page.locator('#log-rows tr').count(), 0, 'the search filters');
  await page.fill('#log-search', '7431');
  t.is(await page.locator('#log-rows tr').count(), 1);
  await shot('log');

  // notifiers: disable one and see its state change
  await page.click('nav a[href="#notifiers"]');
  const state = page.locator('tr[data-notifier="web1"] td[data-state]');
  await state.filter({ hasText: 'enabled' }).waitFor();
  await page.click('tr[data-notifier="web1"] button:has-text("Disable")');
  await page.locator('tr[data-notifier="web1"] td[data-state="disabled"]').waitFor();
  t.is((await client.ok('get_notifier', { ...k, i: 'web1' })).enabled, false);
  await shot('notifiers');

  // items: the live table, then a chart of an item
  await page.click('nav a[href="#items"]');
  await page.waitForSelector('[data-oid="sensor:room/temp"]');
  for (const v of ['21', '22.5', '21.7']) {
    await client.ok('update', { ...k, i: 'sensor:room/temp', v });
    await page.waitForSelector(`[data-oid="sensor:room/temp"] .value:text-is("${v}")`);
  }
  await page.click('[data-oid="sensor:room/temp"] button:has-text("Chart")');
  await page.waitForSelector('#chart .uplot canvas');
  t.regex(await page.textContent('#chart h2') ?? '', /sensor:room\/temp .*\d+ points/);
  await shot('items');

  for (const name of ['users', 'cvars', 'locks', 'cmd']) {
    await page.click(`nav a[href="#${name}"]`);
    await page.waitForSelector(`[data-page="${name}"] h1`);
    if (name === 'users') await page.waitForSelector('td:has-text("operator")');
    await shot(name);
  }

  // a phone
  await page.setViewportSize({ width: 390, height: 800 });
  await page.click('nav a[href="#overview"]');
  await page.waitForSelector('#fact-system');
  await shot('overview-phone');
  t.true(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth + 1'), 'no sideways scrolling on a phone');

  // logout ends the token
  const token = stored.token!;
  await page.click('#logout');
  await page.waitForSelector('#login-form');
  t.is(await page.evaluate<string | null>("sessionStorage.getItem('console.token')"), null);
  t.like(await client.rpc('test', { k: token }), { error: { code: 2 } });

  t.deepEqual(problems, [], 'no script errors and no CSP violations');
  t.true(requested.every((r) => r.startsWith(url) || r.startsWith(url.replace('http', 'ws'))), 'nothing from another origin');
  t.false(requested.some((r) => /token:|S3cret|k=/.test(r)), 'no secret in a URL');
  t.log(`screenshots in ${SHOTS}`);
});

btest('a key without master sees the API refuse in words; an ended session sends the console back to the login form', async (t) => {
  const { url, client } = await startController(t);
  const browser = await launch(t);
  const page = await browser.newPage();
  await page.goto(url);
  // the page can do only what the key can do through the API
  await page.fill('#login-key', Keys.plain);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on');
  t.true(await page.isHidden('nav a[href="#keys"]'), 'no menu entry for a page the key cannot use');
  await page.evaluate("location.hash = '#keys'");
  await page.waitForSelector('[data-page="keys"] p.error:has-text("needs a master key")');
  t.is(await page.locator('tr[data-key]').count(), 0);
  await page.click('#logout');
  await page.waitForSelector('#login-error:has-text("Logged out")');
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on');
  const token = await page.evaluate<string | null>("sessionStorage.getItem('console.token')");
  // the session ends elsewhere (logout with the same token): the stream is closed at once (4001) and the page notices
  await client.ok('logout', { k: token });
  await page.waitForSelector('#login-error:has-text("session has ended")');
  t.is(await page.evaluate<string | null>("sessionStorage.getItem('console.token')"), null);
});
