import fs from 'node:fs';
import path from 'node:path';
import { makeDir, startController, Keys } from '../helpers/controller';
import { browserTest, launch } from '../helpers/chromium';

/**
 * An action's events can reach the console before the answer to its
 * `action` call (a loaded machine; here the answer is held back on purpose
 * until the page has received the action's last event): the card still ends
 * on the newest status, not on the first event that came early.
 */
const btest = browserTest();

btest('an action whose events all come before its call is answered ends on its last status', async (t) => {
  const dir = makeDir(t, { files: { 'xc/uc/hall': '#!/bin/sh\necho "relay stuck" >&2\nexit 4\n' } });
  fs.chmodSync(path.join(dir, 'xc', 'uc', 'hall'), 0o755);
  const { url, client } = await startController(t, { dir });
  await client.ok('create', { k: Keys.master, i: 'unit:lights/hall' });
  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  // the page's stream frames: resolves once a failed action event has arrived
  let sawFailed!: () => void;
  const failedArrived = new Promise<void>((resolve) => { sawFailed = resolve; });
  const frames: string[] = [];
  page.on('websocket', (ws) => ws.on('framereceived', (f) => {
    const text = typeof f.payload === 'string' ? f.payload : f.payload.toString('utf8');
    frames.push(text);
    if (/"failed"/.test(text) && /"action"/.test(text)) sawFailed();
  }));
  await page.route('**/jrpc', async (route) => {
    if (!/"method":"action"/.test(route.request().postData() ?? '')) return route.continue();
    const answer = await route.fetch();
    await failedArrived;
    await route.fulfill({ response: answer });
  });
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on');
  await page.click('nav a[href="#items"]');
  const unit = '[data-oid="unit:lights/hall"]';
  await page.fill(`${unit} input[aria-label="status for unit:lights/hall"]`, '1');
  await page.click(`${unit} button:has-text("Run action")`);
  await page.waitForSelector(`${unit} .progress.error:has-text("Action failed, exit code 4: relay stuck")`, { timeout: 30_000 })
    .catch(async (e) => { t.log(await page.textContent(`${unit} .progress`), frames.slice(-5)); throw e; });
  t.pass();
});
