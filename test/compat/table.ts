/**
 * Print differences.ts as the README's markdown table (function, field,
 * 3.3.2, ours, why), so the README and the list the tests check stay one:
 *
 *   node dist/test/compat/table.js
 */
import { DIFFERENCES, FILE_DIFFERENCES, FRAME_DIFFERENCES, SAVED_DIFFERENCES } from './differences';
import type { Listed } from './match';

const cell = (v: unknown): string => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
};

function rows(list: readonly Listed[]): string[] {
  return list.map((l) => {
    const call = (Array.isArray(l.call) ? l.call : [l.call]).join(', ');
    const where = l.transport === 'all' ? '' : ` (${l.transport})`;
    return `| ${cell(call)}${where} | ${cell(l.path)} | ${cell(l.eva332)} | ${cell(l.ours)} | ${cell(l.why)} |`;
  });
}

if (require.main === module) {
  const head = ['| function | field | 3.3.2 | ours | why |', '|---|---|---|---|---|'];
  for (const [title, list] of [['Answers', DIFFERENCES], ['Web hook and MQTT frames', FRAME_DIFFERENCES], ['On disk after the calls', SAVED_DIFFERENCES], ['Notifier command line and files', FILE_DIFFERENCES]] as const) {
    console.log(`\n#### ${title}\n`);
    console.log([...head, ...rows(list)].join('\n'));
  }
}
