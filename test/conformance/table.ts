/**
 * departures.ts as test/conformance/README.md's table (suite, case, the
 * suite says, ours, why), so the README and the lists the tests check stay one:
 *
 *   node dist/test/conformance/table.js           prints it
 *   node dist/test/conformance/table.js --write   writes it into the README (after MARK, to its end)
 *
 * table.test.ts fails when the README's table is not what this prints.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cell } from '../compat/table';
import { JSON_DEPARTURES, JSONRPC_DEPARTURES, MSGPACK_DEPARTURES, PAGE_DEPARTURES, type Departure } from './departures';

export const MARK = '<!-- the table below is written by node dist/test/conformance/table.js --write -->';
export const README = path.resolve(__dirname, '..', '..', '..', 'test', 'conformance', 'README.md');

export function table(): string {
  const all: readonly Departure[] = [...JSONRPC_DEPARTURES, ...JSON_DEPARTURES, ...MSGPACK_DEPARTURES, ...PAGE_DEPARTURES];
  const rows = all.map((d) => {
    const via = 'via' in d ? ` (${String(d.via)})` : 'finding' in d ? `: ${String(d.finding)}` : '';
    return `| ${cell(d.suite)} | ${cell(d.case + via)} | ${cell(d.suiteSays)} | ${cell(d.ours)} | ${cell(d.why)} |`;
  });
  return ['| suite | case | the suite says | ours | why |', '|---|---|---|---|---|', ...rows].join('\n') + '\n';
}

/** The README as it should be: its text up to MARK, then the table. */
export function readmeWithTable(text: string): string {
  const at = text.indexOf(MARK);
  if (at < 0) throw new Error(`${README} has no line ${MARK}`);
  return `${text.slice(0, at + MARK.length)}\n\n${table()}`;
}

if (require.main === module) {
  if (process.argv.includes('--write')) {
    fs.writeFileSync(README, readmeWithTable(fs.readFileSync(README, 'utf8')));
    console.log(`${README} written`);
  } else {
    process.stdout.write(table());
  }
}
