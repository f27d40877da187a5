/**
 * Record what EVA ICS 3.3.2 left on disk after record.ts's calls (saved.ts's
 * form) into fixtures/eva332-saved.json. Run it after record.ts, once the
 * 3.3.2 controller has stopped (eva33.sh stop WORK):
 *
 *   node dist/test/compat/record-saved.js --dir WORK/uc
 */
import fs from 'node:fs';
import { SAVED, saved332 } from './saved';

async function main(): Promise<void> {
  const i = process.argv.indexOf('--dir');
  const dir = i >= 0 ? process.argv[i + 1] : '/work/eva33/uc';
  fs.writeFileSync(SAVED, `${JSON.stringify(await saved332(dir), null, 2)}\n`);
  console.log(`saved state of ${dir} recorded into ${SAVED}`);
}

if (require.main === module) {
  main().catch((e: unknown) => { console.error(e); process.exit(1); });
}
