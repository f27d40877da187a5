import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { spawnListening } from '../helpers/controller';
import { checkoutRoot, packRelease, tarballFiles, installRelease, nodeOnlyPath, freshControllerDir, masterKey } from '../release/release';
import { browserTest, launch } from '../helpers/chromium';

/**
 * The console and the stream as an operator gets them: from the packed
 * release installed with --omit=dev, not from this checkout's dist/.
 */
let tmp: string;
let tarball: string;
test.before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'console-pkg-'));
  tarball = packRelease(tmp);
});
test.after.always(() => { if (tmp) fs.rmSync(tmp, { recursive: true, force: true }); });

const btest = browserTest();

btest('the installed package serves the console, which logs in and goes live in Chromium with nothing from another origin', async (t) => {
  // every file of the page is in the tarball
  const files = tarballFiles(tarball);
  for (const f of fs.readdirSync(path.join(checkoutRoot(), 'plugins', 'console', 'assets'))) {
    t.true(files.includes(`dist/plugins/console/assets/${f}`), `${f} is in the tarball`);
  }
  const rel = installRelease(tarball, path.join(tmp, 'app'), nodeOnlyPath(tmp));
  const dir = freshControllerDir(tmp);
  const ctl = await spawnListening(t, [rel.bin('eva-controller'), '--dir', dir], { env: rel.env, cwd: rel.app });
  const k = masterKey(dir);

  // the page and what it loads come from the installed package (uPlot from the installed uplot)
  const html = await (await fetch(`${ctl.url}/`)).text();
  const refs = [...html.matchAll(/(?:src|href)="([^"#]+)"/g)].map((m) => m[1]);
  t.true(refs.includes('/vendor/uPlot.min.js'), 'the page loads uPlot');
  for (const ref of refs) {
    const r = await fetch(ctl.url + ref);
    t.is(r.status, 200, ref);
    const body = Buffer.from(await r.arrayBuffer());
    const file = ref.startsWith('/vendor/uPlot.min.')
      ? path.join(rel.app, 'node_modules', 'uplot', 'dist', ref.endsWith('.js') ? 'uPlot.iife.min.js' : 'uPlot.min.css')
      : path.join(rel.pkgDir, 'dist', 'plugins', 'console', 'assets', ref.slice(1));
    t.deepEqual(body, fs.readFileSync(file), `${ref} is ${path.relative(rel.app, file)}`);
  }

  // the stream, with the ws package's own client
  const ws = new WebSocket(`${ctl.url.replace('http', 'ws')}/ws`);
  t.teardown(() => ws.terminate());
  const got: any[] = [];
  ws.on('message', (d) => got.push(JSON.parse(d.toString())));
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  ws.send(JSON.stringify({ m: 'auth', k }));
  ws.send(JSON.stringify({ m: 'subscribe', events: [{ subject: 'log', level: 'info' }] }));
  const seen = async (pred: (m: any) => boolean) => {
    for (let i = 0; i < 200 && !got.some(pred); i++) await new Promise((r) => setTimeout(r, 50));
    return got.find(pred);
  };
  t.truthy(await seen((m) => m.s === 'subscribed'), JSON.stringify(got));
  await ctl.client.ok('log_info', { k, m: 'from the installed package' });
  t.truthy(await seen((m) => m.s === 'log' && m.d.some((e: any) => e.msg === 'from the installed package')), JSON.stringify(got));

  // the page in a browser: log in with the key, the overview fills and the stream is live
  const browser = await launch(t);
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  const requested: string[] = [];
  page.on('request', (r) => requested.push(r.url()));
  await page.goto(ctl.url);
  await page.fill('#login-key', k);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#live.on');
  await page.waitForSelector('#fact-product_code:has-text("uc")');
  // a figure, not a bound (timings here are noisy): first paint of the login form, in this run
  const paint = await page.evaluate<number>("performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1");
  t.log(`first contentful paint ${paint.toFixed(0)} ms`);
  // and with the CPU slowed 4× (a gateway), a fresh page of the same installed package
  const slow = await browser.newPage();
  const cdp = await slow.context().newCDPSession(slow);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
  await slow.goto(ctl.url);
  let slowPaint = -1;
  for (let i = 0; i < 100 && slowPaint < 0; i++) {
    slowPaint = await slow.evaluate<number>("performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1");
    if (slowPaint < 0) await new Promise((r) => setTimeout(r, 100));
  }
  t.log(`first contentful paint with the CPU slowed 4×: ${slowPaint.toFixed(0)} ms`);
  t.deepEqual(problems, [], 'no script errors and no CSP violations');
  t.true(requested.length > 3);
  t.true(requested.every((r) => r.startsWith(ctl.url) || r.startsWith(ctl.url.replace('http', 'ws'))), requested.join(' '));
});
