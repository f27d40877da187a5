import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import test from 'ava';
import { readIni } from '../../core/ini';
import { Paths } from '../../core/paths';
import { discoverPlugins } from '../../core/plugins';
import { checkSettingsFiles, registryOf, type SettingsOwner } from '../../core/settings/check';
import { Eva33Sections, Eva33Settings } from '../../core/settings/eva33';
import type { Finding } from '../../core/settings/schema';
import { MAIN } from '../helpers/controller';
import { FC, fc, same, testProp, type Arbitrary } from './fast-check';

/**
 * The settings check (core/settings: what the controller's start and
 * --check-config run) on generated ini text and on the etc/*.ini-dist
 * samples changed line by line: whatever the text, the check answers its
 * findings, each naming its file and, when it is about a line, a line the
 * text has; it never throws. A sample with any of its documented settings
 * set as documented (uncommented) has no error. --check-config, run as a
 * program on a few such texts, exits 0 or 3 and prints findings only.
 */

const ETC = path.resolve(__dirname, '..', '..', '..', 'etc');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prop-settings-'));
fs.mkdirSync(path.join(dir, 'etc'));
test.after.always(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The built-in plugins (none dropped in), as the controller owns its settings. */
let builtins: Promise<SettingsOwner[]> | undefined;
const owners = () => (builtins ??= discoverPlugins(path.join(dir, 'plugins'), () => undefined).then((ls) => ls.map((l) => ({ ...l.def, file: l.file }))));

/** The declared sections and their keys, to write settings that are known as often as not. */
const SECTIONS = registryOf([]).sections();
const sectionNames = fc.oneof(
  fc.constantFrom(...SECTIONS.keys(), 'mqtt:m1', 'notifier', 'items'),
  fc.constantFrom(...Eva33Sections, 'plugin.x'),
  fc.string({ maxLength: 12 }),
);
const keys = fc.oneof(
  fc.constantFrom(...[...SECTIONS.values()].flatMap((s) => Object.keys(s))),
  fc.constantFrom(...Object.values(Eva33Settings).flat()),
  fc.string({ maxLength: 12 }),
);
const values = fc.oneof(
  fc.constantFrom('', '0', '-1', '1.5', '1e400', 'NaN', 'yes', 'no', 'maybe', '99999999999999999999', '0.0.0.0:8828', '127.0.0.1:0', '[::1]:0',
    ':8828', 'localhost', '/nonexistent/file.pem', 'certs/x.pem', '"quoted"', "'x", '#', ';', '*', 'a, b', '300s', '0x10'),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const line = fc.oneof(
  { arbitrary: sectionNames.map((s) => `[${s}]`), weight: 2 },
  { arbitrary: fc.tuple(keys, fc.constantFrom(' = ', '=', ': ', ' : '), values).map(([k, sep, v]) => `${k}${sep}${v}`), weight: 6 },
  { arbitrary: fc.constantFrom('', '   ', '; a comment', '# a comment', '[unclosed', '[]', '[[x]]', '= no name', 'just words', '\t[server]\t'), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 1 },
);
const iniText = fc.tuple(fc.array(line, { maxLength: 25 }), fc.constantFrom('\n', '\r\n')).map(([ls, eol]) => ls.join(eol));

/** The findings of a settings text, and what is wrong with them: a throw, a finding without a file, a line the text has not. */
async function check(text: string): Promise<{ findings: Finding[]; wrong: string[] }> {
  const paths = new Paths(dir, 'uc');
  const lines = text.split(/\r?\n/).length;
  const wrong: string[] = [];
  let findings: Finding[] = [];
  try {
    findings = checkSettingsFiles(paths, await owners(), readIni(text, paths.configFile));
  } catch (err) {
    wrong.push(`threw ${err instanceof Error ? err.stack : String(err)}`);
  }
  for (const f of findings) {
    if (!f.file || !['error', 'warning', 'info'].includes(f.level) || !f.message) wrong.push(`malformed finding ${JSON.stringify(f)}`);
    if (f.file === paths.configFile && f.line !== undefined && !(Number.isInteger(f.line) && f.line >= 1 && f.line <= lines)) {
      wrong.push(`line ${f.line} of ${lines}: ${f.message}`);
    }
  }
  return { findings, wrong };
}

testProp(`${FC} › settings › any ini text: findings with their file and a line of the text, never a throw`, [iniText], async (t, text) => {
  same(t, (await check(text)).wrong, []);
}, { numRuns: 6_000 });

/** The samples' lines. */
const SAMPLES = ['uc', 'lm', 'sfa'].map((p) => fs.readFileSync(path.join(ETC, `${p}.ini-dist`), 'utf8').split('\n'));
/** `; key = value`: a setting the sample documents, commented out. */
const DOCUMENTED = /^;\s*([a-z_][a-z0-9_]*\s*=.*)$/;

type Mutation = { op: 'uncomment' | 'delete' | 'duplicate' | 'swap' | 'value' | 'insert'; at: number; to: number; text: string };
const mutation: Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom('uncomment', 'uncomment', 'delete', 'duplicate', 'swap', 'value', 'insert'),
  at: fc.nat(), to: fc.nat(), text: fc.oneof(line, values),
});

function mutate(lines: string[], ms: Mutation[]): string[] {
  const out = [...lines];
  for (const m of ms) {
    const i = m.at % out.length;
    const j = m.to % out.length;
    if (m.op === 'uncomment') out[i] = out[i].replace(DOCUMENTED, '$1');
    else if (m.op === 'delete' && out.length > 1) out.splice(i, 1);
    else if (m.op === 'duplicate') out.splice(j, 0, out[i]);
    else if (m.op === 'swap') [out[i], out[j]] = [out[j], out[i]];
    else if (m.op === 'value') out[i] = out[i].replace(/=.*$/, `= ${m.text}`);
    else if (m.op === 'insert') out.splice(i, 0, m.text);
  }
  return out;
}

testProp(`${FC} › settings › the samples changed line by line: findings with their file and a line of the text, never a throw`, [
  fc.nat(2), fc.array(mutation, { minLength: 1, maxLength: 6 }),
], async (t, n, ms) => {
  same(t, (await check(mutate(SAMPLES[n], ms).join('\n'))).wrong, []);
}, { numRuns: 3_000 });

testProp(`${FC} › settings › a sample with any of its documented settings set as documented: no error`, [
  fc.nat(2), fc.array(fc.nat(), { maxLength: 12 }),
], async (t, n, picks) => {
  const lines = [...SAMPLES[n]];
  const documented = lines.flatMap((l, i) => (DOCUMENTED.test(l) ? [i] : []));
  for (const p of picks) lines[documented[p % documented.length]] = lines[documented[p % documented.length]].replace(DOCUMENTED, '$1');
  const { findings, wrong } = await check(lines.join('\n'));
  same(t, wrong, []);
  same(t, findings.filter((f) => f.level === 'error').map((f) => `${f.line}: ${f.message}`), [], picks.map((p) => lines[documented[p % documented.length]]).join('\n'));
}, { numRuns: 1_500 });

/** What --check-config prints: findings (`file[:line]: level: message`) and its summary, nothing else (no stack). */
const FINDING = /^\S.*?: (error|warning|info): /;

testProp(`${FC} › settings › --check-config on generated text: exit 0 or 3, only findings printed`, [iniText], (t, text) => {
  const d = fs.mkdtempSync(path.join(dir, 'cc-'));
  fs.mkdirSync(path.join(d, 'etc'));
  fs.writeFileSync(path.join(d, 'etc', 'uc.ini'), text);
  const r = spawnSync(process.execPath, [MAIN, '--dir', d, '--product', 'uc', '--check-config'], { encoding: 'utf8', timeout: 60_000 });
  t.true(r.status === 0 || r.status === 3, `exit ${r.status} ${r.signal ?? ''}\n${r.stderr}`);
  const stray = r.stderr.split('\n').filter((l) => l !== '' && !FINDING.test(l));
  same(t, stray, [], r.stderr);
  t.false(/\n\s+at /.test(r.stderr + r.stdout), 'a stack trace');
}, { numRuns: 5 });
