import { startController, Keys } from '../helpers/controller';
import { browserTest, fitsPhone, launch } from '../helpers/chromium';

const btest = browserTest();

btest('readable on a phone: no page of the console scrolls sideways at 360×740', async (t) => {
  const notifier = JSON.stringify({ id: 'phone-notifier-with-a-long-name', type: 'json', enabled: true, skip_test: true, uri: 'http://127.0.0.1:9/', events: [{ subject: 'state', types: ['#'], groups: ['#'] }] });
  const { url, client } = await startController(t, {
    files: { 'runtime/uc_notify.d/phone-notifier-with-a-long-name.json': notifier },
    ini: { server: { keep_api_log: 3600, api_log_write_interval: 0.1 } }, // the History page has rows: these calls
  });
  const k = { k: Keys.master };
  // wide content on every page: long names, many columns
  await client.ok('create_key', { ...k, i: 'a-rather-long-key-name-for-a-phone' });
  await client.ok('create_user', { ...k, u: 'operator-with-a-long-login', p: 'S3cret-pass', a: 'masterkey' });
  await client.ok('create', { ...k, i: 'sensor:building/floor1/room/temperature' });
  await client.ok('update', { ...k, i: 'sensor:building/floor1/room/temperature', s: 1, v: '20.5' });
  await client.ok('set_cvar', { ...k, i: 'a_long_custom_variable_name', v: 'a value that is long enough to be wide' });
  await client.ok('log_warning', { ...k, m: 'a log record with a long message that wraps on a narrow screen, and a path /opt/controller/runtime/some/deep/file' });
  // many rows: items, log records, locks
  for (let i = 0; i < 30; i++) {
    await client.ok('create', { ...k, i: `sensor:building/floor${i}/room-with-a-long-name/probe${i}` });
    await client.ok('log_info', { ...k, m: `record ${i}: ${'a-long-word-without-spaces-'.repeat(4)}` });
    await client.ok('lock', { ...k, l: `lock-with-a-long-name-${i}`, e: 600 });
  }

  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width: 360, height: 740 } });
  await page.goto(url);
  await page.fill('#login-key', Keys.master);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on', { timeout: 30_000 });
  const names = await page.$$eval('#nav a', (as) => as.map((a) => a.getAttribute('href')!.slice(1)));
  t.true(names.length >= 9, `the menu has every page (${names.join(', ')})`);
  const filled: Record<string, string> = {
    overview: '#health [data-notifier]', keys: 'tr[data-key]', users: 'td:has-text("operator-with")',
    notifiers: 'tr[data-notifier]', log: '#log-rows tr', items: '[data-oid]', cvars: 'td:has-text("a_long_custom")', locks: 'tr[data-lock]', cmd: 'h1',
    history: 'tr[data-call]',
  };
  for (const name of names) {
    await page.click(`nav a[href="#${name}"]`);
    await page.waitForSelector(`[data-page="${name}"] ${filled[name] ?? 'h1'}`, { timeout: 30_000 });
    if (name === 'items') {
      await page.click('[data-oid] button:has-text("Chart")');
      await page.waitForSelector('#chart .uplot canvas', { timeout: 30_000 });
    }
    const w = await page.evaluate<{ scroll: number; client: number }>('({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })');
    if (w.scroll > w.client) t.log(await page.evaluate<string>(`[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > ${w.client}).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join("\\n")`));
    t.true(w.scroll <= w.client, `${name}: the page is ${w.scroll} px wide on a ${w.client} px screen`);
    t.deepEqual(await fitsPhone(page), [], `${name}: every table, button, cell and message inside the screen`);
  }
});
