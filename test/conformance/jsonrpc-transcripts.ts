/**
 * The JSON RPC 2.0 specification's examples (section 7) as transcripts: the
 * request text as the specification writes it, and the answer it gives
 * (undefined: no answer). Answers are compared without `message`, which the
 * specification leaves to the server (5.1).
 */
export interface Transcript { name: string; request: string; answer: unknown }

const err = (code: number, id: unknown) => ({ jsonrpc: '2.0', error: { code }, id });

export const TRANSCRIPTS: readonly Transcript[] = [
  { name: 'rpc call with positional parameters', request: '{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}', answer: { jsonrpc: '2.0', result: 19, id: 1 } },
  { name: 'rpc call with positional parameters, reversed', request: '{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}', answer: { jsonrpc: '2.0', result: -19, id: 2 } },
  { name: 'rpc call with named parameters', request: '{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}', answer: { jsonrpc: '2.0', result: 19, id: 3 } },
  { name: 'rpc call with named parameters, reordered', request: '{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}', answer: { jsonrpc: '2.0', result: 19, id: 4 } },
  { name: 'a notification', request: '{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}', answer: undefined },
  { name: 'a notification without params', request: '{"jsonrpc": "2.0", "method": "foobar"}', answer: undefined },
  { name: 'rpc call of non-existent method', request: '{"jsonrpc": "2.0", "method": "foobar", "id": "1"}', answer: err(-32601, '1') },
  { name: 'rpc call with invalid JSON', request: '{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]', answer: err(-32700, null) },
  { name: 'rpc call with invalid Request object', request: '{"jsonrpc": "2.0", "method": 1, "params": "bar"}', answer: err(-32600, null) },
  {
    name: 'rpc call Batch, invalid JSON',
    request: '[\n  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},\n  {"jsonrpc": "2.0", "method"\n]',
    answer: err(-32700, null),
  },
  { name: 'rpc call with an empty Array', request: '[]', answer: err(-32600, null) },
  { name: 'rpc call with an invalid Batch (but not empty)', request: '[1]', answer: [err(-32600, null)] },
  { name: 'rpc call with invalid Batch', request: '[1,2,3]', answer: [err(-32600, null), err(-32600, null), err(-32600, null)] },
  {
    name: 'rpc call Batch',
    request: `[
        {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
    ]`,
    answer: [
      { jsonrpc: '2.0', result: 7, id: '1' },
      { jsonrpc: '2.0', result: 19, id: '2' },
      err(-32600, null),
      err(-32601, '5'),
      { jsonrpc: '2.0', result: ['hello', 5], id: '9' },
    ],
  },
  {
    name: 'rpc call Batch (all notifications)',
    request: '[\n  {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},\n  {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}\n]',
    answer: undefined,
  },
];
