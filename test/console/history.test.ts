import fs from 'node:fs';
import path from 'node:path';
import { startController, Keys } from '../helpers/controller';
import { browserTest, launch, SHOTS } from '../helpers/chromium';

/** The History page: who did what, from api_log_get. Chromium, a real controller with its API call log. */
const btest = browserTest();

const WAIT = { timeout: 30_000 };
const ON = { server: { keep_api_log: 3600, api_log_write_interval: 0.1 }, webapi: { login_free_failures: 100 } };
/** stored-XSS probes: in a function's parameter and in the login a refused login tried */
const PROBE = '<img src=x onerror="window.__xss=1">';
const USER_PROBE = '<script>window.__xss=2</script>';

btest('history page: logins and changes newest first, filtered by user, paged; log data shown as text', async (t) => {
  const { url, client } = await startController(t, { ini: ON });
  const m = { k: Keys.master };
  await client.ok('create_user', { ...m, u: 'op', p: 'secret-op', a: 'plain' });
  const op = (await client.ok('login', { u: 'op', p: 'secret-op' })).token;
  await client.rpc('login', { u: 'op', p: 'Wrong-Password' });
  await client.ok('test', { k: op });
  await client.rpc('set_cvar', { k: op, i: 'x', v: '1' });
  await client.rpc('login', { u: USER_PROBE, p: 'x' });
  await client.ok('set_cvar', { ...m, i: 'probe', v: PROBE });
  for (let i = 0; i < 110; i++) await client.ok('set_cvar', { ...m, i: `c${i}`, v: String(i) });

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on', WAIT);
  await page.click('nav a[href="#history"]');
  await page.waitForSelector('[data-page="history"] #calls-rows tr[data-call]', WAIT);

  const ids = () => page.$$eval('#calls-rows tr[data-call]', (rs) => rs.map((r) => r.getAttribute('data-call')!));
  const cells = (field: string) => page.$$eval(`#calls-rows td[data-field="${field}"]`, (ds) => ds.map((d) => d.textContent));
  // the changes, newest first, as api_log_get has them: the console's own login first, then the set_cvar calls
  const changes = ((await client.ok('api_log_get', { ...m, c: true })) as any[]).reverse().map((r) => r.id);
  const first = await ids();
  t.is(first.length, 50);
  t.deepEqual(first, changes.slice(0, 50));
  t.deepEqual((await cells('func')).slice(0, 2), ['login', 'set_cvar']);
  t.false((await cells('func')).includes('test'), 'reads are not changes');
  t.true(await page.isDisabled('#calls-newer'));
  t.false((await page.textContent('[data-page="history"]'))!.includes('undefined'), 'no missing value shown as a word');

  // pages back and forth
  await page.click('#calls-older');
  // a function, not a string: Playwright evals a string predicate while it polls, which the console's CSP refuses
  await page.waitForFunction((was) => (globalThis as any).document.querySelector('#calls-rows tr[data-call]')?.getAttribute('data-call') !== was, first[0], WAIT);
  t.deepEqual(await ids(), changes.slice(50, 100));
  t.regex(await page.textContent('#calls-page') ?? '', /page 2/);
  await page.click('#calls-older');
  await page.waitForSelector('#calls-page:has-text("page 3")', WAIT);
  t.deepEqual(await ids(), changes.slice(100));
  t.true(await page.isDisabled('#calls-older'), 'the oldest page');
  // the stored probes are text: no element made of them, nothing run
  const probeRow = page.locator('#calls-rows tr', { hasText: 'onerror' });
  t.is(await probeRow.locator('td[data-field="params"]').textContent(), JSON.stringify({ i: 'probe', v: PROBE }));
  t.true((await cells('u')).includes(USER_PROBE));
  t.is(await page.locator('#page img, #page script').count(), 0);
  t.is(await page.evaluate('window.__xss'), undefined);
  await page.click('#calls-newer');
  await page.waitForSelector('#calls-page:has-text("page 2")', WAIT);
  t.deepEqual(await ids(), changes.slice(50, 100));

  // by user: op's logins, accepted and refused, with their address, and the change refused; back on page 1
  await page.fill('#calls-user', 'op');
  await page.click('[data-page="history"] button[type="submit"]');
  await page.waitForSelector('#calls-page:has-text("page 1")', WAIT);
  const opRows = await page.$$eval('#calls-rows tr', (rs) => rs.map((r) => [...r.querySelectorAll('td[data-field]')].map((d) => d.textContent)));
  t.deepEqual(opRows, [
    ['op', 'plain', '127.0.0.1', 'set_cvar', '{"i":"x","v":"1"}', 'refused (AccessDenied)'],
    ['op', '', '127.0.0.1', 'login', '{"u":"op","p":"<hidden>"}', 'refused (AccessDenied)'],
    ['op', 'plain', '127.0.0.1', 'login', '{"u":"op","p":"<hidden>"}', 'ok'],
  ]);
  t.true(await page.isDisabled('#calls-older'));
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, 'history.png'), fullPage: true });
  await page.selectOption('#calls-view', 'refused');
  await page.fill('#calls-func', 'login');
  await page.click('[data-page="history"] button[type="submit"]');
  // a function, not a string: Playwright evals a string predicate while it polls, which the console's CSP refuses
  await page.waitForFunction((sel) => (globalThis as any).document.querySelectorAll(sel).length === 1, '#calls-rows tr', WAIT);
  t.deepEqual(await cells('status'), ['refused (AccessDenied)']);
  // a time range that holds nothing
  await page.fill('#calls-from', '2099-01-01T00:00:00');
  await page.click('[data-page="history"] button[type="submit"]');
  await page.waitForSelector('#calls-empty:visible', WAIT);
  t.deepEqual(problems, []);
});

btest('history page of a user whose key is not master: their own calls only, no user or key filter', async (t) => {
  const { url, client } = await startController(t, { ini: ON });
  const m = { k: Keys.master };
  await client.ok('create_user', { ...m, u: 'op', p: 'secret-op', a: 'plain' });
  await client.ok('create_user', { ...m, u: 'ed', p: 'secret-ed', a: 'plain' });
  const ed = (await client.ok('login', { u: 'ed', p: 'secret-ed' })).token;
  await client.rpc('set_cvar', { k: ed, i: 'x', v: '1' });
  await client.ok('set_cvar', { ...m, i: 'x', v: '2' });

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(url);
  await page.fill('#login-user', 'op');
  await page.fill('#login-password', 'secret-op');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on', WAIT);
  await page.click('nav a[href="#history"]');
  await page.waitForSelector('[data-page="history"] #calls-rows tr[data-call]', WAIT);
  t.is(await page.locator('#calls-user, #calls-key').count(), 0);
  t.false((await page.textContent('[data-page="history"]'))!.includes('undefined'));
  t.regex(await page.textContent('[data-page="history"] p.muted') ?? '', /sees only its own calls/);
  const rows = await page.$$eval('#calls-rows tr', (rs) => rs.map((r) => [...r.querySelectorAll('td[data-field]')].map((d) => d.textContent)));
  t.deepEqual(rows.map((r) => [r[0], r[3], r[5]]), [['op', 'login', 'ok']]);
});
