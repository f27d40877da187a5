import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { startController } from '../helpers/controller';
/** Debian's Chromium, as the console tests use (test/helpers/chromium.ts, which needs ava and so is not imported here). */
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
import { consoleFiles } from '../../plugins/console/index';

/**
 * `npm run bench -- console`: first contentful paint of the console in
 * Chromium, unthrottled and with the CPU slowed 4× (a gateway), served by a
 * real controller beside a bare node:http server sending the same built files.
 * The median of RUNS page loads each, fresh browser context every load.
 */
const RUNS = 7;

async function bareServer(): Promise<{ url: string; close(): void }> {
  const files = new Map(Object.entries(consoleFiles()).map(([u, f]) => [u, fs.readFileSync(f)]));
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };
  const server = http.createServer((req, res) => {
    const u = req.url === '/' ? '/index.html' : req.url ?? '';
    const body = files.get(u);
    if (!body) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': types[path.extname(u)] ?? 'application/octet-stream', 'Content-Length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => server.close() };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  if (!fs.existsSync(CHROMIUM)) { console.log(`console bench skipped: no Chromium at ${CHROMIUM}`); return; }
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const ctl = await startController(undefined);
  const bare = await bareServer();
  try {
    const paint = async (url: string, rate: number) => {
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const context = await browser.newContext();
        const page = await context.newPage();
        const cdp = await page.context().newCDPSession(page);
        await cdp.send('Emulation.setCPUThrottlingRate', { rate });
        await page.goto(url);
        // polled with evaluate: waitForFunction evaluates a string in the page, which its CSP refuses
        let fcp = -1;
        for (let i = 0; i < 600 && fcp < 0; i++) {
          fcp = await page.evaluate<number>("performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1");
          if (fcp < 0) await new Promise((r) => setTimeout(r, 100));
        }
        times.push(fcp);
        await context.close();
      }
      return median(times);
    };
    console.log(`first contentful paint of the console, median of ${RUNS} loads (ms)`);
    console.log('| CPU | controller | bare node:http | ratio |');
    console.log('|---|---|---|---|');
    for (const rate of [1, 4]) {
      const c = await paint(`${ctl.url}/`, rate);
      const b = await paint(bare.url, rate);
      console.log(`| ${rate === 1 ? 'unthrottled' : `${rate}× slower (gateway)`} | ${c.toFixed(0)} | ${b.toFixed(0)} | ${(c / b).toFixed(2)} |`);
    }
  } finally {
    bare.close();
    await ctl.stop();
    await browser.close();
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
