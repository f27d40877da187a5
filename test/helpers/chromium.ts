import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { Page } from 'playwright-core';
import { skipWhen } from './tools';

/** Debian's Chromium; CHROMIUM names another. Without one the browser tests are skipped, and say so. */
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/** Where the run writes a screenshot of every page (plugins/console/README.md). */
export const SHOTS = path.join(os.tmpdir(), 'console-screenshots');

/** `test` when Chromium is there, else `test.skip` with the reason in the title. */
export function browserTest(): typeof test {
  return skipWhen(!fs.existsSync(CHROMIUM) && `no Chromium at ${CHROMIUM} (set CHROMIUM to one)`);
}

/** A headless Chromium through playwright-core, closed when the test ends. */
export async function launch(t: { teardown(fn: () => unknown): void }) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  return browser;
}

/** At 360 px: neither the page nor any table is wider than the screen, and every button and message is inside it. */
export async function fitsPhone(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const w = document.documentElement.clientWidth;
    const out = [];
    if (document.documentElement.scrollWidth > w) out.push('page ' + document.documentElement.scrollWidth + ' px wide');
    for (const el of document.querySelectorAll('table, .scroll, pre')) if (el.tagName !== 'PRE' && el.scrollWidth > el.clientWidth + 1) out.push(el.tagName + ' scrolls sideways (' + el.scrollWidth + ' > ' + el.clientWidth + ')');
    for (const el of document.querySelectorAll('h1, h2, p, dd, td, .oid')) if (el.scrollWidth > el.clientWidth + 1) out.push(el.tagName + ' "' + el.textContent.trim().slice(0, 30) + '" overflows its box');
    for (const el of document.querySelectorAll('button, #status, td, .progress, .lacks')) {
      const r = el.getBoundingClientRect();
      if (r.width && (r.right > w + 1 || r.left < -1)) out.push(el.tagName + ' "' + el.textContent.trim().slice(0, 30) + '" at ' + Math.round(r.left) + '..' + Math.round(r.right));
    }
    return out;
  })()`);
}

