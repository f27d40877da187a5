import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';

/** Debian's Chromium; CHROMIUM names another. Without one the browser tests are skipped, and say so. */
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/** Where the run writes a screenshot of every page (plugins/console/README.md). */
export const SHOTS = path.join(os.tmpdir(), 'console-screenshots');

/** `test` when Chromium is there, else `test.skip` (and a line saying why). */
export function browserTest(): typeof test {
  if (fs.existsSync(CHROMIUM)) return test;
  console.log(`console browser tests skipped: no Chromium at ${CHROMIUM} (set CHROMIUM to one)`);
  return test.skip as unknown as typeof test;
}

/** A headless Chromium through playwright-core, closed when the test ends. */
export async function launch(t: { teardown(fn: () => unknown): void }) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  return browser;
}
