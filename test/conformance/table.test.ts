import test from 'ava';
import fs from 'node:fs';
import { README, readmeWithTable } from './table';

test('conformance › test/conformance/README.md holds the departures table as departures.ts lists it today', (t) => {
  const text = fs.readFileSync(README, 'utf8');
  t.true(text === readmeWithTable(text), 'stale: run `npm run build && node dist/test/conformance/table.js --write`');
});
