import fs from 'node:fs';
import path from 'node:path';
import { makeDir, startController, Keys } from '../helpers/controller';
import { browserTest, launch } from '../helpers/chromium';
import { until } from '../helpers/wait';
import type { Page } from 'playwright-core';

/** The console's actions each do what the API says they did; errors come in words. Chromium, a real controller. */
const btest = browserTest();

/** Wait for the status line to report on `what`; it must say done. */
async function done(page: Page, what: string): Promise<void> {
  await page.waitForSelector(`#status:has-text("${what}:")`);
  const said = await page.textContent('#status');
  if (said !== `${what}: done`) throw new Error(`the console says: ${said}`);
}

btest('console actions: debug, save, key edit/regenerate/destroy, user password, cvars, locks, cmd', async (t) => {
  const dir = makeDir(t, { files: { 'xc/cmd/hello': '#!/bin/sh\necho "hello $1"\necho "to stderr" >&2\nexit 3\n' } });
  fs.chmodSync(path.join(dir, 'xc', 'cmd', 'hello'), 0o755);
  const { url, client } = await startController(t, { dir });
  const k = { k: Keys.master };
  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    // confirm() yes; prompt() for a password gets one
    void (d.type() === 'prompt' ? d.accept('N3w-passw0rd') : d.accept());
  });
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on');

  // overview: the debug switch and save
  await page.waitForSelector('#fact-system');
  t.false((await client.ok('test', k)).debug);
  await page.click('#debug');
  await done(page, 'Debug on');
  t.true((await client.ok('test', k)).debug);
  await page.click('button:has-text("Save")');
  await done(page, 'Save');

  // keys: create, an error in words, edit a property, regenerate, destroy
  await page.click('nav a[href="#keys"]');
  await page.fill('#new-key-id', 'k2');
  await page.click('form:has(#new-key-id) button');
  await page.waitForSelector('tr[data-key="k2"]');
  const first = (await page.textContent('.secret'))!.trim();
  t.is((await client.rpc('test', { k: first })).result?.ok, true, 'the value shown works');
  await page.fill('#new-key-id', 'k2');
  await page.click('form:has(#new-key-id) button');
  await page.waitForSelector('#status.error');
  t.regex(await page.textContent('#status') ?? '', /^Create key k2: [A-Z][a-z ]+: .*k2/, 'the API error, in words');
  await page.click('tr[data-key="k2"] button:has-text("Edit")');
  await page.selectOption('#prop-name', 'groups');
  await page.fill('#prop-value', 'room/#');
  await page.click('form:has(#prop-value) button:has-text("Set")');
  await done(page, 'Set groups of k2');
  t.deepEqual((await client.ok('list_key_props', { ...k, i: 'k2' })).groups, ['room/#']);
  await page.click('tr[data-key="k2"] button:has-text("Regenerate")');
  await done(page, 'Regenerate k2');
  const second = (await page.textContent('.secret'))!.trim();
  t.not(second, first);
  t.like(await client.rpc('test', { k: first }), { error: { code: 2 } }, 'the old value stops working');
  t.is((await client.rpc('test', { k: second })).result?.ok, true);
  await page.click('tr[data-key="k2"] button:has-text("Destroy")');
  await done(page, 'Destroy k2');
  // "done" comes before the table is read again: wait for the row to go (a timeout fails the test)
  await page.locator('tr[data-key="k2"]').waitFor({ state: 'detached' });
  t.falsy((await client.ok('list_keys', k)).find((x: any) => x.key_id === 'k2'));

  // users: create, set the password (a prompt), the new one logs in
  await page.click('nav a[href="#users"]');
  await page.fill('#new-user', 'op2');
  await page.fill('#new-user-password', 'Old-passw0rd');
  await page.fill('#new-user-key', 'masterkey');
  await page.click('form:has(#new-user) button:has-text("Create")');
  await page.waitForSelector('td:has-text("op2")');
  await page.click('tr:has(td:text-is("op2")) button:has-text("Set password")');
  await done(page, 'Password of op2');
  t.like(await client.rpc('login', { u: 'op2', p: 'Old-passw0rd' }), { error: { code: 2 } });
  t.regex((await client.ok('login', { u: 'op2', p: 'N3w-passw0rd' })).token, /^token:/);

  // cvars: create, edit in the table, delete
  await page.click('nav a[href="#cvars"]');
  await page.fill('#new-cvar', 'room_temp');
  await page.fill('#new-cvar-value', '21');
  await page.click('form:has(#new-cvar) button:has-text("Set")');
  await page.waitForSelector('input[aria-label="value of room_temp"]');
  t.deepEqual(await client.ok('get_cvar', { ...k, i: 'room_temp' }), { room_temp: '21' });
  await page.fill('input[aria-label="value of room_temp"]', '22.5');
  await page.click('tr:has(input[aria-label="value of room_temp"]) button:has-text("Set")');
  // the status still says "Set room_temp: done" from the creation: the stored value tells when this set is done
  await until('room_temp set to 22.5', async () => (await client.ok('get_cvar', { ...k, i: 'room_temp' })).room_temp === '22.5');
  await done(page, 'Set room_temp');
  await page.click('tr:has(input[aria-label="value of room_temp"]) button:has-text("Delete")');
  await done(page, 'Delete room_temp');
  await page.locator('input[aria-label="value of room_temp"]').waitFor({ state: 'detached' });
  t.like(await client.rpc('get_cvar', { ...k, i: 'room_temp' }), { error: { code: 1 } });

  // locks: acquire, see it, release
  await page.click('nav a[href="#locks"]');
  await page.fill('#lock-id', 'door');
  await page.click('button:has-text("Acquire")');
  await done(page, 'Lock door'); // acquired, then shown
  await page.waitForSelector('dd:text-is("true")');
  t.like(await client.ok('get_lock', { ...k, l: 'door' }), { locked: true });
  await page.click('button:has-text("Release")');
  await page.waitForSelector('dd:text-is("false")');
  t.like(await client.ok('get_lock', { ...k, l: 'door' }), { locked: false });

  // cmd: run a script and see its output, errors and exit code
  await page.click('nav a[href="#cmd"]');
  await page.fill('#cmd-name', 'hello');
  await page.fill('#cmd-args', 'operator');
  await page.click('form:has(#cmd-name) button:has-text("Run")');
  await page.waitForSelector('#cmd-out pre:has-text("hello operator")');
  t.regex(await page.textContent('#cmd-out') ?? '', /exit code 3.*to stderr/s);
  await page.fill('#cmd-name', '../outside');
  await page.click('form:has(#cmd-name) button:has-text("Run")');
  await page.waitForSelector('#status.error:has-text("Run ../outside: Not found")');
  t.deepEqual(problems, []);
});

btest('a login that expires sends the console back to the login form by itself', async (t) => {
  const { url, client } = await startController(t, { ini: { webapi: { session_timeout: 5, session_no_prolong: true, ws_ping_interval: 1 } } });
  await client.ok('create_user', { k: Keys.master, u: 'op', p: 'S3cret-pass', a: 'masterkey' });
  const browser = await launch(t);
  const page = await browser.newPage();
  await page.goto(url);
  await page.fill('#login-user', 'op');
  await page.fill('#login-password', 'S3cret-pass');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on');
  // no click: the stream's ping round finds the token gone and the page notices
  await page.waitForSelector('#login-error:has-text("session has ended")', { timeout: 20_000 });
  t.is(await page.evaluate<string | null>("sessionStorage.getItem('console.token')"), null);
});

btest('a call refused because the token passed its lifetime (token expired) sends the console back to the login form', async (t) => {
  // no ping round to notice first: the refusal of the page's own calls must do it
  const { url, client } = await startController(t, { ini: { webapi: { session_max_lifetime: 5, ws_ping_interval: 600 } } });
  await client.ok('create_user', { k: Keys.master, u: 'op', p: 'S3cret-pass', a: 'masterkey' });
  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  await page.goto(url);
  await page.fill('#login-user', 'op');
  await page.fill('#login-password', 'S3cret-pass');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#fact-system');
  const token = await page.evaluate<string | null>("sessionStorage.getItem('console.token')");
  await until('the token to pass its lifetime', async () => (await client.rpc('test', { k: token })).error?.message === 'token expired');
  await page.waitForSelector('#login-error:has-text("session has ended")', { timeout: 20_000 });
  t.is(await page.evaluate<string | null>("sessionStorage.getItem('console.token')"), null);
});

btest('log page (reached by keyboard): log_get history, then the live tail under the level filter; notifier counters move without a reload', async (t) => {
  // a json endpoint the notifier delivers to
  const http = await import('node:http');
  let posts = 0;
  const rx = http.createServer((req, res) => { req.resume(); req.on('end', () => { posts++; res.setHeader('Content-Type', 'application/json'); res.end('{"result":"OK"}'); }); });
  await new Promise<void>((r) => rx.listen(0, '127.0.0.1', r));
  t.teardown(() => { rx.closeAllConnections(); rx.close(); });
  const port = (rx.address() as { port: number }).port;
  const notifier = JSON.stringify({ id: 'hook', type: 'json', enabled: true, skip_test: true, uri: `http://127.0.0.1:${port}/`, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] });
  const { url, client } = await startController(t, { files: { 'runtime/uc_notify.d/hook.json': notifier } });
  const k = { k: Keys.master };
  await client.ok('create', { ...k, i: 'sensor:room/t' });
  await client.ok('log_info', { ...k, m: 'before the page opened 5521' });
  const browser = await launch(t);
  const page = await browser.newPage();
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on');

  // by keyboard: Tab reaches the menu, Enter opens the page
  let tabs = 0;
  while (!(await page.evaluate<boolean>('document.activeElement?.getAttribute("href") === "#log"'))) {
    if (++tabs > 40) throw new Error('Tab never reached the Log link');
    await page.keyboard.press('Tab');
  }
  await page.keyboard.press('Enter');
  await page.waitForSelector('#log-rows td:has-text("before the page opened 5521")');
  await page.selectOption('#log-level', '30');
  await page.waitForSelector('#log-rows td:has-text("before the page opened 5521")', { state: 'detached' });
  await client.ok('log_info', { ...k, m: 'live info 5522' });
  await client.ok('log_warning', { ...k, m: 'live warning 5523' });
  await page.waitForSelector('#log-rows td:has-text("live warning 5523")');
  t.is(await page.locator('#log-rows td:has-text("live info 5522")').count(), 0, 'info is under the level');
  await page.selectOption('#log-level', '20');
  await page.waitForSelector('#log-rows td:has-text("live info 5522")');

  await page.click('nav a[href="#notifiers"]');
  const sent = page.locator('tr[data-notifier="hook"] td.num').nth(1);
  await sent.waitFor();
  const before = Number(await sent.textContent());
  await client.ok('update', { ...k, i: 'sensor:room/t', s: 1, v: '1' });
  await until('the receiver to get a post', () => posts > 0);
  await until('the sent counter to rise', async () => Number(await sent.textContent()) > before, 10_000); // the page's own refresh, no reload
  t.true(Number(await sent.textContent()) > before);
});
