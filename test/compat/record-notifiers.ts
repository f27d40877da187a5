/**
 * Run notifier-commands.ts with EVA ICS 3.3.2's uc-notifier on a fresh
 * controller folder and record the exit codes (fixtures/eva332-notifiers/cli.json)
 * and the files it wrote (fixtures/eva332-notifiers/files/).
 *
 *   node dist/test/compat/record-notifiers.js --dir WORK/nt
 * (WORK/nt: a fresh copy of the folder eva33.sh set up; its bin/uc-notifier is run with EVA_DIR set)
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { NOTIFIER_COMMANDS } from './notifier-commands';
import { NOTIFIER_FILES } from './frames';

function main(): void {
  const i = process.argv.indexOf('--dir');
  const dir = path.resolve(i >= 0 ? process.argv[i + 1] : '/work/eva33/nt');
  const codes = NOTIFIER_COMMANDS.map((args) => {
    const r = spawnSync(path.join(dir, 'bin', 'uc-notifier'), args, { env: { ...process.env, EVA_DIR: dir }, encoding: 'utf8' });
    return { args, code: r.status };
  });
  fs.mkdirSync(NOTIFIER_FILES, { recursive: true });
  fs.writeFileSync(path.join(path.dirname(NOTIFIER_FILES), 'cli.json'), `${JSON.stringify(codes, null, 2)}\n`);
  const nd = path.join(dir, 'runtime', 'uc_notify.d');
  for (const f of fs.readdirSync(nd).filter((x) => x.endsWith('.json'))) fs.copyFileSync(path.join(nd, f), path.join(NOTIFIER_FILES, f));
  console.log(`${codes.length} commands (${codes.filter((c) => c.code !== 0).length} failed); files: ${fs.readdirSync(nd).join(' ')}`);
}

if (require.main === module) main();
