import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { makeDir, startController, Keys } from '../helpers/controller';
import { browserTest, launch } from '../helpers/chromium';

const btest = browserTest();
const WAIT = { timeout: 30_000 };

/**
 * Tab until the focused element matches `selector` (at most `max` presses);
 * every control the keyboard passes on the way must show where it is.
 */
async function tabTo(page: Page, selector: string, unseen: Set<string>, text?: string, max = 80): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const at = await page.evaluate<{ match: boolean; what: string; visible: boolean }>(`(() => {
      const el = document.activeElement;
      if (!el || el === document.body) return { match: false, what: 'body', visible: true };
      const s = getComputedStyle(el);
      const outline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
      const label = el.textContent.trim();
      const what = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (label ? ' "' + label.slice(0, 20) + '"' : '');
      const match = el.matches(${JSON.stringify(selector)}) && (${JSON.stringify(text ?? null)} === null || label === ${JSON.stringify(text ?? null)});
      return { match, what, visible: outline || s.boxShadow !== 'none' };
    })()`);
    if (!at.visible) unseen.add(at.what);
    if (at.match) return;
  }
  throw new Error(`${selector} not reached with ${max} presses of Tab`);
}

btest('keyboard usable: every page opened and its main action done with the keyboard alone; focus is always visible', async (t) => {
  const notifier = JSON.stringify({ id: 'kb1', type: 'json', enabled: true, skip_test: true, uri: 'http://127.0.0.1:9/', events: [{ subject: 'state', types: ['#'], groups: ['#'] }] });
  const dir = makeDir(t, {
    files: { 'xc/cmd/hello': '#!/bin/sh\necho "hello $1"\n', 'runtime/uc_notify.d/kb1.json': notifier },
    ini: { server: { keep_api_log: 3600, api_log_write_interval: 0.1 } }, // the History page has rows: this test's calls
  });
  fs.chmodSync(path.join(dir, 'xc', 'cmd', 'hello'), 0o755);
  const { url, client } = await startController(t, { dir });
  const k = { k: Keys.master };
  await client.ok('create', { ...k, i: 'sensor:kb/temp' });
  await client.ok('update', { ...k, i: 'sensor:kb/temp', s: 1, v: '20.5' });

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  const unseen = new Set<string>();
  await page.goto(url);
  // login: the user field has the focus; Tab on to the key
  await page.waitForSelector('#login-user:focus', WAIT);
  await tabTo(page, '#login-key', unseen);
  await page.keyboard.type(Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on', WAIT);

  /** open a page from the menu: Tab to its link, Enter */
  const open = async (name: string, ready: string) => {
    await tabTo(page, `#nav a[href="#${name}"]`, unseen);
    await page.keyboard.press('Enter');
    await page.waitForSelector(`[data-page="${name}"] ${ready}`, WAIT);
  };
  const type = async (text: string) => page.keyboard.type(text);

  await open('overview', '#health [data-notifier="kb1"]');
  await tabTo(page, '#debug', unseen);
  await page.keyboard.press('Space');
  await page.waitForSelector('#status:has-text("Debug on: done")', WAIT);
  t.true((await client.ok('test', k)).debug);

  await open('keys', 'h1');
  await tabTo(page, '#new-key-id', unseen);
  await type('kb-key');
  await page.keyboard.press('Enter');
  await page.waitForSelector('tr[data-key="kb-key"]', WAIT);
  t.truthy((await client.ok('list_keys', k)).find((x: any) => x.key_id === 'kb-key'));
  await tabTo(page, 'tr[data-key="kb-key"] button', unseen, 'Edit');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#prop-name:focus', WAIT);
  await type('groups'); // a select picks the option typed
  await page.keyboard.press('Tab');
  await page.keyboard.press('Control+A');
  await type('room1,room2');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#status:has-text("Set groups of kb-key: done")', WAIT);
  t.deepEqual((await client.ok('list_key_props', { ...k, i: 'kb-key' })).groups, ['room1', 'room2']);

  await open('users', 'h1');
  await tabTo(page, '#new-user', unseen);
  await type('kbuser');
  await page.keyboard.press('Tab');
  await type('S3cret-pass');
  await page.keyboard.press('Tab');
  await type('kb-key');
  await page.keyboard.press('Enter');
  await page.waitForSelector('td:text("kbuser")', WAIT);

  await open('notifiers', 'tr[data-notifier="kb1"] td[data-state="enabled"]');
  await tabTo(page, 'tr[data-notifier="kb1"] button[data-action="toggle"]', unseen);
  await page.keyboard.press('Enter');
  await page.waitForSelector('tr[data-notifier="kb1"] td[data-state="disabled"]', WAIT);
  t.is((await client.ok('get_notifier', { ...k, i: 'kb1' })).enabled, false);
  // the keyboard keeps its place: Enter again enables it back
  await page.waitForSelector('tr[data-notifier="kb1"] button[data-action="toggle"]:focus', WAIT);
  await page.keyboard.press('Enter');
  await page.waitForSelector('tr[data-notifier="kb1"] td[data-state="enabled"]', WAIT);

  await open('log', '#log-rows tr');
  await client.ok('log_warning', { ...k, m: 'typed search 5531' });
  await page.waitForSelector('#log-rows td:has-text("typed search 5531")', WAIT);
  await tabTo(page, '#log-search', unseen);
  await type('5531');
  // a function, not a string: Playwright evals a string predicate while it polls, which the console's CSP refuses
  await page.waitForFunction((sel) => (globalThis as any).document.querySelectorAll(sel).length === 1, '#log-rows tr', WAIT);

  // the history of what was just done, filtered from the keyboard
  await open('history', '#calls-rows tr[data-call]');
  await tabTo(page, '#calls-func', unseen);
  await type('create_user');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => {
    const cells = (globalThis as any).document.querySelectorAll('#calls-rows td[data-field=func]');
    return cells.length === 1 && cells[0].textContent === 'create_user';
  }, undefined, WAIT);

  await open('items', '[data-oid="sensor:kb/temp"]');
  await tabTo(page, '[data-oid="sensor:kb/temp"] button', unseen, 'Chart');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#chart .uplot canvas', WAIT);

  await open('cvars', 'h1');
  await tabTo(page, '#new-cvar', unseen);
  await type('kbvar');
  await page.keyboard.press('Tab');
  await type('42');
  await page.keyboard.press('Enter');
  await page.waitForSelector('td:text("kbvar")', WAIT);
  t.like(await client.ok('get_cvar', { ...k, i: 'kbvar' }), { kbvar: '42' });

  await open('locks', 'h1');
  await tabTo(page, '#lock-id', unseen);
  await type('kblock');
  await tabTo(page, 'button', unseen, 'Acquire');
  await page.keyboard.press('Enter');
  // after the lock is taken the page reads it back and shows it
  await page.waitForSelector('[data-page="locks"] dl dt:text("locked")', WAIT);
  t.like(await client.ok('get_lock', { ...k, l: 'kblock' }), { locked: true });

  await open('cmd', 'h1');
  await tabTo(page, '#cmd-name', unseen);
  await type('hello');
  await page.keyboard.press('Tab');
  await type('keyboard');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#cmd-out pre:has-text("hello keyboard")', WAIT);

  // log out from the keyboard too
  await tabTo(page, '#logout', unseen);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#login-error:has-text("Logged out")', WAIT);
  t.deepEqual([...unseen], [], 'every focused control has a visible outline');
});
