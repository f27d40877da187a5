/**
 * Record the answers of a running EVA ICS 3.3.2 controller to every call of
 * calls.ts, over the four transports, into test/compat/fixtures/eva332/
 * (one JSON file per function, masked). Not a test: run it by hand against
 * a fresh 3.3.2 folder holding calls.ts's SETUP.
 *
 *   node dist/test/compat/record.js --url http://127.0.0.1:28812 [--out DIR]
 *        [--master KEY] [--op KEY] [--plain KEY]
 */
import fs from 'node:fs';
import path from 'node:path';
import { SETUP } from './calls';
import { replay } from './replay';

export const FIXTURES = path.resolve(__dirname, '..', '..', '..', 'test', 'compat', 'fixtures', 'eva332');

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : dflt;
}

async function main(): Promise<void> {
  const url = arg('url', 'http://127.0.0.1:28812');
  const out = path.resolve(arg('out', FIXTURES));
  const secrets = { master: arg('master', SETUP.secrets.master), op: arg('op', SETUP.secrets.op), plain: arg('plain', SETUP.secrets.plain) };
  const started = Date.now();
  const fixtures = await replay(url, secrets);
  fs.mkdirSync(out, { recursive: true });
  let n = 0;
  for (const f of fixtures) {
    fs.writeFileSync(path.join(out, `${f.fn}.json`), `${JSON.stringify(f, null, 2)}\n`);
    n += f.cases.reduce((s, c) => s + Object.keys(c.answers).length, 0);
  }
  console.log(`${fixtures.length} functions, ${n} answers recorded into ${out} in ${Date.now() - started} ms`);
}

if (require.main === module) {
  main().catch((e: unknown) => { console.error(e); process.exit(1); });
}
