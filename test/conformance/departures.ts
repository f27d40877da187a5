/**
 * Where this controller answers otherwise than a conformance suite, on
 * purpose: the table of test/conformance/README.md (table.test.ts keeps it
 * current). 3.3.2's answer wins on 3.3's paths (test/compat).
 */
export interface Departure {
  suite: string;
  case: string;
  suiteSays: string;
  ours: string;
  why: string;
}

export interface RpcDeparture extends Departure { answer: unknown }

const SECTION7 = 'JSON RPC 2.0 §7';
const POSITIONAL = 'error 11 (invalid params): params must be an object';
const POSITIONAL_WHY = 'the specification (decisions: params is an object of the short names k, i, ...) and 3.3\'s functions take parameters by name; params by position are invalid parameters (11)';
const UNKNOWN = 'error 6 (function unknown)';
const UNKNOWN_WHY = '3.3.2: an unknown function is code 6, the API client code (specification, Errors; decisions: 6 / 405)';
const e = (code: number, id: unknown) => ({ jsonrpc: '2.0', error: { code }, id });

export const JSONRPC_DEPARTURES: readonly RpcDeparture[] = [
  { suite: SECTION7, case: 'rpc call with positional parameters', suiteSays: 'result 19', ours: POSITIONAL, why: POSITIONAL_WHY, answer: e(11, 1) },
  { suite: SECTION7, case: 'rpc call with positional parameters, reversed', suiteSays: 'result -19', ours: POSITIONAL, why: POSITIONAL_WHY, answer: e(11, 2) },
  { suite: SECTION7, case: 'rpc call of non-existent method', suiteSays: 'error -32601', ours: UNKNOWN, why: UNKNOWN_WHY, answer: e(6, '1') },
  {
    suite: SECTION7, case: 'rpc call Batch', suiteSays: 'results 7 and 19, error -32601 for foo.get',
    ours: 'error 11 for the two calls by position, error 6 for foo.get', why: 'as the three above',
    answer: [e(11, '1'), e(11, '2'), e(-32600, null), e(6, '5'), { jsonrpc: '2.0', result: ['hello', 5], id: '9' }],
  },
];

/** promtool's findings on the prometheus notifier's page, per metric. */
export const PAGE_DEPARTURES: readonly (Departure & { finding: string })[] = [
  {
    suite: 'promtool check metrics', case: 'the prometheus notifier\'s page', finding: 'metric names should not contain \':\'',
    suiteSays: 'no \':\' in a metric name (kept for recording rules)', ours: 'sensor:env:temp1:value',
    why: '3.3.2: an item\'s metrics are named by its oid, its / as :, and dashboards query those names',
  },
  {
    suite: 'promtool check metrics', case: 'the prometheus notifier\'s page', finding: 'no help text',
    suiteSays: 'a HELP line per family', ours: 'TYPE lines only',
    why: '3.3.2: the page as 3.3 wrote it (a TYPE line and the sample); /metrics, not 3.3\'s, has HELP on every family',
  },
];

/** msgpack-test-suite cases ("<file> #<n>") answered with an error `code` instead of the value. */
const BEYOND = {
  suite: 'msgpack-test-suite', ours: 'error 11 (invalid params): integers beyond 2^53 are not exact, refused', code: 11,
  why: 'a parameter is a JavaScript number: a 64-bit integer past 2^53 would be rounded, so it is refused (core/schema/parse.ts)',
};
export const MSGPACK_DEPARTURES: readonly (Departure & { code: number })[] = [
  { ...BEYOND, case: '23.number-bignum.yaml #5', suiteSays: '9223372036854775807 back' },
  { ...BEYOND, case: '23.number-bignum.yaml #6', suiteSays: '-9223372036854775807 back' },
  { ...BEYOND, case: '23.number-bignum.yaml #7', suiteSays: '9223372036854775808 back' },
  { ...BEYOND, case: '23.number-bignum.yaml #8', suiteSays: '-9223372036854775808 back' },
  { ...BEYOND, case: '23.number-bignum.yaml #9', suiteSays: '18446744073709551615 back' },
];

/** JSONTestSuite cases answered otherwise than the suite says, by way (/jrpc or direct API). */
export const JSON_DEPARTURES: readonly (Departure & { via: '/jrpc' | 'direct API' })[] = [
  {
    suite: 'JSONTestSuite', case: 'n_structure_no_data.json', via: 'direct API', suiteSays: 'an empty text is no JSON: a parse error',
    ours: 'a call without parameters (here 403: no key)',
    why: 'a direct POST without a body is a call without parameters, as a GET without a query (clients such as curl -X POST send none); 3.3.2\'s answer to it is not recorded',
  },
];
