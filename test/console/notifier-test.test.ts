import fs from 'node:fs';
import path from 'node:path';
import { startController, Keys } from '../helpers/controller';
import { Receiver, subjectOf } from '../helpers/receiver';
import { notifierFiles } from '../helpers/notifiers';
import { browserTest, launch, SHOTS } from '../helpers/chromium';

/** The Notifiers page's Test button: test_notifier's answer in words. Chromium, a real controller, real receivers. */
const btest = browserTest();

btest('notifiers page: Test says OK when the receiver answers and the reason when it is down; by keyboard across the refresh', async (t) => {
  const up = await Receiver.start(t);
  const gone = await Receiver.start(t);
  const goneUri = gone.uri;
  await gone.close();
  const { url } = await startController(t, {
    files: notifierFiles({
      up: { type: 'json', uri: up.uri, skip_test: true },
      down: { type: 'json', uri: goneUri, skip_test: true, enabled: false },
    }),
  });
  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on');
  await page.click('nav a[href="#notifiers"]');

  await page.click('tr[data-notifier="up"] button:has-text("Test")');
  await page.waitForSelector('#status:has-text("Test up: OK")');
  t.is(await page.getAttribute('#status', 'class'), 'ok');
  t.deepEqual(up.requests.map(subjectOf), ['test'], 'the receiver got the test');

  // by keyboard: the Test button keeps the focus when the table is redrawn (every 2 s), Enter presses it
  await page.focus('tr[data-notifier="down"] button:has-text("Test")');
  await page.evaluate('document.querySelector("[data-page] table").dataset.old = "1"');
  await page.waitForSelector('table[data-old]', { state: 'detached', timeout: 10_000 });
  t.true(await page.evaluate<boolean>('document.activeElement?.textContent === "Test" && document.activeElement.closest("tr").dataset.notifier === "down"'));
  await page.keyboard.press('Enter');
  await page.waitForSelector('#status.error:has-text("Test down:")');
  t.regex(await page.textContent('#status') ?? '', /^Test down: Failed: notifier down test failed: .*ECONNREFUSED/);
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, 'notifiers-test.png'), fullPage: true });
  t.deepEqual(problems, []);
});
