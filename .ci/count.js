#!/usr/bin/env node
'use strict';
/**
 * Counts the tests of several TAP files (the suite on each Node version, the
 * MQTT tests against mosquitto, the ARM run) once each, by title: a test
 * failed if it failed in any run, passed if it passed in one and failed in
 * none, skipped if it was skipped wherever it ran. Prints each run's own
 * figures, the failed and skipped titles (a failure with what ava said of it, its first
 * lines: the end of CI's output is what a reader sees first), then
 * `N passed, M failed, K skipped`.
 * Exit 1 when a test failed or none passed.
 */
const fs = require('node:fs');

const tests = new Map(); // title -> { passed, failed, skipped, runs: [] }
for (const arg of process.argv.slice(2)) {
  const [label, file] = arg.split('=');
  const own = { passed: 0, failed: 0, skipped: 0 };
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^(not ok|ok) \d+ - (.*?)(?:\s+# (SKIP|TODO)\b.*)?$/.exec(lines[i]);
    if (!m) continue;
    // a TODO test is work not yet done, listed (ava writes it `not ok ... # TODO`): not a failure, as TAP says
    const outcome = m[3] ? 'skipped' : m[1] === 'not ok' ? 'failed' : 'passed';
    own[outcome]++;
    const t = tests.get(m[2]) ?? { passed: 0, failed: 0, skipped: 0, runs: [] };
    t[outcome]++;
    if (outcome === 'failed') {
      t.runs.push(label);
      // ava's indented block after the line: the assertion, the values, where
      const said = [];
      for (let j = i + 1; j < lines.length && said.length < 25 && /^  /.test(lines[j]); j++) said.push(lines[j]);
      t.said ??= said;
    }
    tests.set(m[2], t);
  }
  console.log(`# ${label}: ${own.passed} passed, ${own.failed} failed, ${own.skipped} skipped`);
}
let passed = 0, failed = 0, skipped = 0;
for (const [title, t] of tests) {
  if (t.failed) {
    failed++;
    console.log(`# FAILED (${t.runs.join(', ')}): ${title}`);
    for (const l of t.said) console.log(`#   ${l}`);
  }
  else if (t.passed) passed++;
  else { skipped++; console.log(`# skipped: ${title}`); }
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
