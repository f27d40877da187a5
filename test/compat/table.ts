/**
 * Print differences.ts as the README's markdown table (function, field,
 * 3.3.2, ours, why), so the README and the list the tests check stay one:
 *
 *   node dist/test/compat/table.js           prints it
 *   node dist/test/compat/table.js --write   writes it into test/compat/README.md (after MARK)
 *
 * table.test.ts fails when the README's table is not what this prints.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DIFFERENCES, FILE_DIFFERENCES, FRAME_DIFFERENCES, SAVED_DIFFERENCES } from './differences';
import type { Listed } from './match';

export const cell = (v: unknown): string => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  const text = s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  // an address in a value is a value, not a link
  return text.includes('://') && !text.includes('`') ? `\`${text}\`` : text;
};

function rows(list: readonly Listed[]): string[] {
  return list.map((l) => {
    const call = (Array.isArray(l.call) ? l.call : [l.call]).join(', ');
    const where = l.transport === 'all' ? '' : ` (${l.transport})`;
    return `| ${cell(call)}${where} | ${cell(l.path)} | ${cell(l.eva332)} | ${cell(l.ours)} | ${cell(l.why)} |`;
  });
}

/** The line of test/compat/README.md after which the table stands (to the end of the file). */
export const MARK = '<!-- the table below is written by node dist/test/compat/table.js --write -->';
export const README = path.resolve(__dirname, '..', '..', '..', 'test', 'compat', 'README.md');

export function table(): string {
  const head = ['| function | field | 3.3.2 | ours | why |', '|---|---|---|---|---|'];
  const parts: string[] = [];
  for (const [title, list] of [['Answers', DIFFERENCES], ['Web hook and MQTT frames', FRAME_DIFFERENCES], ['On disk after the calls', SAVED_DIFFERENCES], ['Notifier command line and files', FILE_DIFFERENCES]] as const) {
    parts.push(`\n### ${title}\n`, [...head, ...rows(list)].join('\n'));
  }
  return parts.join('\n') + '\n';
}

/** The README as it should be: its text up to MARK, then the table. */
export function readmeWithTable(text: string): string {
  const at = text.indexOf(MARK);
  if (at < 0) throw new Error(`${README} has no line ${MARK}`);
  return text.slice(0, at + MARK.length) + '\n' + table();
}

if (require.main === module) {
  if (process.argv.includes('--write')) {
    fs.writeFileSync(README, readmeWithTable(fs.readFileSync(README, 'utf8')));
    console.log(`${README} written`);
  } else {
    process.stdout.write(table());
  }
}
