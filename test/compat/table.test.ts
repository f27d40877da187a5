import test from 'ava';
import fs from 'node:fs';
import { README, readmeWithTable } from './table';

test('test/compat/README.md holds the differences table as differences.ts lists it today', (t) => {
  const text = fs.readFileSync(README, 'utf8');
  t.true(text === readmeWithTable(text), 'stale: run `npm run build && node dist/test/compat/table.js --write`');
});
