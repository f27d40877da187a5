import test from 'ava';
import { reconcile, ANY, ANY_TEXT, type Listed } from './match';
import { compare, ABSENT, type Fixture } from './replay';

const answer = (status: number, body: unknown) => ({ status, headers: { 'content-type': 'application/json' }, body });
const fixture = (get: unknown, jrpc: unknown): Fixture[] => [{ fn: 'f', cases: [{ id: 'f:a', answers: { get: get as never, jrpc: jrpc as never } }] }];

test('a difference not listed is reported; a listed one that no longer occurs is stale; direct and JSON RPC paths meet at result. and error', (t) => {
  const theirs = fixture(answer(200, { x: 1, msg: 'a' }), answer(200, { jsonrpc: '2.0', id: 1, result: { x: 1 } }));
  const ours = fixture(answer(200, { x: 2, msg: 'b' }), answer(200, { jsonrpc: '2.0', id: 1, result: { x: 2, y: true } }));
  const found = compare(theirs, ours);
  t.deepEqual(found.map((d) => `${d.transport} ${d.path}`).sort(), ['get body.msg', 'get body.x', 'jrpc body.result.x', 'jrpc body.result.y']);
  const listed: Listed[] = [
    { call: 'f', transport: 'all', path: 'result.x', eva332: 1, ours: 2, why: 'w' },
    { call: 'f:a', transport: 'direct', path: 'result.msg', eva332: ANY_TEXT, ours: ANY_TEXT, why: 'w' },
    { call: '*', transport: 'rpc', path: 'result.z', eva332: ANY, ours: ANY, why: 'no longer occurs' },
  ];
  const { unlisted, stale } = reconcile(listed, found);
  t.deepEqual(unlisted.map((d) => d.path), ['body.result.y']);
  t.deepEqual(stale.map((l) => l.path), ['result.z']);
  // a listed value must be the value found
  t.is(reconcile([{ ...listed[0], ours: 3 }], found).unlisted.length, 4);
});

test('two sides that end differently are one outcome difference, not one per member of their bodies', (t) => {
  const theirs = fixture(answer(200, { x: 1, y: 2 }), answer(200, { jsonrpc: '2.0', id: 1, result: { x: 1 } }));
  const ours = fixture(answer(405, { _error: 'no', result: 'ERROR' }), answer(200, { jsonrpc: '2.0', id: 1, error: { code: 6, message: 'no' } }));
  const found = compare(theirs, ours);
  t.deepEqual(found.map((d) => [d.transport, d.path, d.eva332, d.ours]), [['get', 'outcome', '200', '405'], ['jrpc', 'outcome', 'result', 'error 6']]);
  t.not(found[0].ours, ABSENT);
});
