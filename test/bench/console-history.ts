import fs from 'node:fs';
import { startController, Keys } from '../helpers/controller';
import { table, fmt, bigSqliteHistory } from './lib';

/**
 * The console's chart over a big history:
 *
 *   node dist/test/bench/console-history.js
 *
 * 1,000,000 rows of one sensor spread over the last week in a db notifier's
 * SQLite file (made by the sqlite3 program, as history-query.ts makes its
 * day), the console in headless Chromium, the sensor's chart at each range
 * (hour, day, week: state_history with a= and the server's w): points drawn,
 * the page's own time for the call, and the time from choosing the range to
 * the chart drawn; medians of 5 choices after a first. BENCH_CH_ROWS sets the
 * rows. Needs the sqlite3 program and Chromium (CHROMIUM names another).
 */
const ROWS = Number(process.env.BENCH_CH_ROWS ?? 1_000_000);
const OID = 'sensor:bench/s';
const WEEK = 7 * 86400;
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  if (!fs.existsSync(CHROMIUM)) { console.log(`console-history bench skipped: no Chromium at ${CHROMIUM}`); return; }
  const end = Math.floor(Date.now() / 1000);
  process.stderr.write(`… ${ROWS} rows over a week by sqlite3\n`);
  const { dir, file } = await bigSqliteHistory({ id: 'hist', oid: OID, rows: ROWS, end, span: WEEK });
  try {
    const mb = fs.statSync(file).size / 1e6;
    const c = await startController(undefined, { dir });
    try {
      await c.client.ok('create', { k: Keys.master, i: OID });
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
        await page.goto(c.url);
        await page.fill('#login-key', Keys.master);
        await page.keyboard.press('Enter');
        await page.waitForSelector('#live.on');
        await page.click('nav a[href="#items"]');
        await page.click(`[data-oid="${OID}"] button:has-text("Chart")`);
        await page.waitForSelector('#chart .uplot canvas', { timeout: 60_000 });
        const rows: (string | number)[][] = [];
        for (const range of ['hour', 'day', 'week']) {
          const call: number[] = []; const drawn: number[] = []; let points = '';
          for (let i = 0; i < 6; i++) {
            // another range first, so choosing this one asks again
            await page.selectOption('#chart-range', range === 'hour' ? 'day' : 'hour');
            await page.waitForSelector(`#chart h2[data-range="${range === 'hour' ? 'day' : 'hour'}"]`, { timeout: 60_000 });
            const started = Date.now();
            await page.selectOption('#chart-range', range);
            await page.waitForSelector(`#chart h2[data-range="${range}"]`, { timeout: 60_000 });
            if (i === 0) continue;
            drawn.push(Date.now() - started);
            call.push(Number(await page.$eval('#chart h2', (e) => e.getAttribute('data-ms'))));
            points = (/(\d+) points?\)/.exec(await page.textContent('#chart h2') ?? '') ?? [])[1] ?? '?';
          }
          rows.push([range, points, fmt(median(call), 0), fmt(median(drawn), 0)]);
        }
        console.log(`the console's chart over ${ROWS} rows of one sensor in a week (${fmt(mb, 0)} MB SQLite), medians of 5\n`);
        console.log(table(['range', 'points drawn', 'state_history call ms (page)', 'range chosen to chart drawn ms'], rows));
      } finally {
        await browser.close();
      }
    } finally {
      await c.stop();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
