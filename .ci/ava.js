#!/usr/bin/env node
'use strict';
/**
 * `npm test`: ava, with a closing line that counts a crashed test file.
 *
 * When a test file's process dies (a signal such as SIGSEGV, or a non-zero
 * exit outside a test), ava names it once and its summary counts only the
 * tests that ran: "2 tests passed" after a crash. This runs ava with the
 * same arguments, passes its output through as it comes, and ends with
 * `N passed, M failed[, K skipped]` where every crashed file is one failure,
 * named on the line before. With --tap the TAP stream is left as it is
 * (.ci/count.js reads the crashed file's `not ok` line) and the names follow
 * as TAP comments.
 */
const path = require('node:path');
const { spawn } = require('node:child_process');

const args = process.argv.slice(2);
const tap = args.includes('--tap');
const cli = path.join(__dirname, '..', 'node_modules', 'ava', 'entrypoints', 'cli.mjs');
const child = spawn(process.execPath, [cli, ...args], { stdio: ['inherit', 'pipe', 'pipe'] });

const crashed = new Set();
const counts = { passed: 0, failed: 0, skipped: 0, known: 0 };
const CRASH = /(\S+\.test\.[cm]?js) (exited due to \S+|exited with a non-zero exit code: \d+)/;
const SUMMARY = /^\s*(\d+) (?:tests? )?(passed|failed|skipped|known failures?)\b/;
const PASSED = /^\s*✔ /;
let ticks = 0;

function watch(stream, out) {
  let rest = '';
  stream.on('data', (chunk) => {
    out.write(chunk);
    const lines = (rest + chunk.toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) see(line);
  });
  stream.on('end', () => { if (rest) see(rest); });
}

function see(line) {
  const c = CRASH.exec(line);
  if (c) crashed.add(`${c[1]} (${c[2]})`);
  if (tap) return;
  const plain = line.replace(/\x1b\[[0-9;]*m/g, '');
  // ava's summary names the passed tests only when none failed: those are counted by their lines
  if (PASSED.test(plain)) ticks++;
  const s = SUMMARY.exec(plain);
  if (s) counts[s[2].startsWith('known') ? 'known' : s[2]] = Number(s[1]);
}

watch(child.stdout, process.stdout);
watch(child.stderr, process.stderr);
child.on('close', (code, signal) => {
  const names = [...crashed];
  if (tap) {
    for (const n of names) process.stdout.write(`# crashed test file: ${n}\n`);
  } else {
    for (const n of names) process.stdout.write(`  crashed test file, its remaining tests did not run: ${n}\n`);
    const failed = counts.failed + names.length;
    process.stdout.write(`\n${Math.max(counts.passed, ticks)} passed, ${failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ''}\n`);
  }
  process.exit(code === 0 && !signal && !names.length ? 0 : code || 1);
});
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => child.kill(s));
