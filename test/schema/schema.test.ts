import test from 'ava';
import {
  any, bool, bound, choice, declData, defaults, describeNotifierSetting, describeSetting, fromCall, fromCallParams, fromFile,
  fromNotifier, fromText, int, jsonSchema, list, MAX_TIMER_SECONDS, num, object, seconds, settingData, text, typeOf,
  type Params,
} from '../../core/schema';
import { ApiError } from '../../core/errors';
import { FunctionRegistry } from '../../core/functions';

test('a builder with a default is a setting: its range starts at 0; without one it is a parameter with no range', (t) => {
  t.like(int(5, 'count'), { type: 'integer', default: 5, min: 0, max: Number.MAX_SAFE_INTEGER, required: false });
  t.like(bound(5, 'most', 'bytes'), { type: 'integer', min: 1, unit: 'bytes' });
  t.like(seconds(1, 'wait', 0.001), { type: 'seconds', min: 0.001, max: MAX_TIMER_SECONDS, unit: 's' });
  const p = int('status');
  t.is(p.min, undefined);
  t.is(p.max, undefined);
  t.true(p.req().required);
  t.false(p.required, 'req() makes a new declaration');
  t.like(text('', 'name'), { type: 'string', default: '' });
  t.like(text('a name'), { type: 'string', description: 'a name' });
  t.is(text('a name').default, undefined);
  t.like(text('password', { secret: true }), { secret: true });
  t.deepEqual(defaults({ a: int(1, 'a'), b: bool(true, 'b'), c: choice('x', ['x', 'y'] as const, 'c') }), { a: 1, b: true, c: 'x' });
});

test('plain declarations (drop-in plugins) may name a type by its ini alias', (t) => {
  t.is(typeOf({ type: 'int' }), 'integer');
  t.is(typeOf({ type: 'bool' }), 'boolean');
  t.is(typeOf({ type: 'string' }), 'string');
  t.is(typeOf({ type: 'str' }), undefined);
  t.like(fromText({ type: 'int', description: '', required: false, min: 0, max: 9 } as never, '3'), { ok: true, value: 3 });
});

test('text origin: whole numbers in range, yes/no, listed choices; empty is the default', (t) => {
  t.deepEqual(fromText(int(5, 'n'), ' '), { ok: true, value: 5 });
  t.deepEqual(fromText(int(5, 'n'), '-1'), { ok: false, why: '-1 is out of range (at least 0)' });
  t.deepEqual(fromText(int(5, 'n', { max: 9 }), '10'), { ok: false, why: '10 is out of range (0 to 9)' });
  t.deepEqual(fromText(num(5, 'n'), '0x10'), { ok: false, why: '"0x10" is not a number' });
  t.deepEqual(fromText(int(5, 'n'), '1.5'), { ok: false, why: '"1.5" is not a whole number' });
  t.deepEqual(fromText(bool(false, 'b'), 'maybe'), { ok: false, why: '"maybe" is not yes or no' });
  t.deepEqual(fromText(choice('a', ['a', 'b'], 'c'), 'B'), { ok: false, why: '"B" is not one of a, b' });
});

test('file origin: the text rule on a JSON value; a boolean is no text, an object no setting', (t) => {
  t.deepEqual(fromFile(int(5, 'n'), 7), { ok: true, value: 7 });
  t.deepEqual(fromFile(int(5, 'n'), null), { ok: true, value: 5 });
  t.deepEqual(fromFile(text('', 's'), 5), { ok: true, value: '5' });
  t.deepEqual(fromFile(text('', 's'), true), { ok: false, why: 'true is not a text' });
  t.deepEqual(fromFile(bool(false, 'b'), true), { ok: true, value: true });
  t.deepEqual(fromFile(int(5, 'n'), { a: 1 }), { ok: false, why: '{"a":1} is not a single value' });
});

test('call origin: JSON values or their text; refusals are invalid_params', (t) => {
  t.is(fromCall('n', int('n'), '-3'), -3);
  t.is(fromCall('s', text('s'), true), 'true', 'a boolean is taken as its text');
  t.is(fromCall('s', text('s'), 5), '5');
  t.deepEqual(fromCall('l', list('l'), 'a,b'), ['a', 'b']);
  t.is(fromCall('w', seconds('w'), '1.5'), 1.5);
  const err = t.throws(() => fromCall('w', seconds('w'), -1), { instanceOf: ApiError });
  t.is(err?.message, `parameter w: seconds, 0 to ${MAX_TIMER_SECONDS}`);
  t.throws(() => fromCall('n', int('n'), 1.5), { message: 'parameter n: expected integer' });
  t.throws(() => fromCall('n', int('n'), 2 ** 60), { message: /beyond 2\^53/ });
  t.throws(() => fromCall('c', choice('a', ['a', 'b'], 'c'), 'x'), { message: 'parameter c: one of a, b' });
  // a parameter's choice has no default: absent, it stays absent
  t.deepEqual(fromCallParams({ c: choice(['a', 'b'], 'c') }, {}), {});
  t.is(fromCall('c', choice(['a', 'b'], 'c'), 'b'), 'b');
  t.throws(() => fromCall('c', choice(['a', 'b'], 'c'), 'x'), { message: 'parameter c: one of a, b' });
  t.deepEqual(fromCall('x', any('x'), { a: [1, 'b'] }), { a: [1, 'b'] });
  t.throws(() => fromCallParams({ a: int('a').req() }, {}), { message: 'missing parameter: a' });
  t.throws(() => fromCallParams({ a: int('a') }, { b: 1 }), { message: 'unknown parameter: b' });
  t.deepEqual(fromCallParams({ a: int('a') }, { a: '1', k: 'key' }, 'k'), { a: 1 });
});

test('notifier origin: a number\'s text read as a number, a number where text is meant is text, only a declared range', (t) => {
  t.is(fromNotifier('port', int('port', { min: 1, max: 65535 }), '1883'), 1883);
  t.is((fromNotifier('port', int('port', { min: 1, max: 65535 }), 0) as Error).message, 'port must be from 1 to 65535, not 0');
  t.is((fromNotifier('flag', bool('flag'), 'maybe') as Error).message, 'flag must be true or false, not "maybe"');
  t.is((fromNotifier('uri', text('uri'), true) as Error).message, 'uri must be a string');
  t.is(fromNotifier('n', num('n'), -5), -5);
  t.deepEqual(fromNotifier('qos', object({ state: 1 }, 'qos'), 2), 2);
});

test('one describer: ini line, notifier help line, JSON Schema, data', (t) => {
  t.is(describeSetting('retries', int(5, 'tries')), 'retries (int, at least 0; default 5): tries');
  t.is(describeSetting('wait', seconds(1, 'a wait')), `wait (number, 0 to ${MAX_TIMER_SECONDS} s; default 1): a wait`);
  t.is(describeSetting('on', bool(false, 'on')), 'on (bool; default no): on');
  t.is(describeNotifierSetting('max_rows', int(10, 'most rows', { min: 1 })), 'max_rows (integer, default 10, at least 1): most rows');
  t.is(describeNotifierSetting('uri', text('the receiver').req()), 'uri (string, required): the receiver');
  t.deepEqual(jsonSchema(seconds('w')), { type: 'number', minimum: 0, maximum: MAX_TIMER_SECONDS });
  t.deepEqual(jsonSchema(choice(['a', 'b'], 'c')), { enum: ['a', 'b'] });
  t.deepEqual(jsonSchema(list('l')), { oneOf: [{ type: 'array', items: { type: 'string' } }, { type: 'string' }] });
  t.deepEqual(declData(text('password', { secret: true }).req()), { type: 'string', required: true, secret: true, description: 'password' });
  t.like(settingData(bound(3, 'most')), { type: 'int', default: 3, min: 1 });
});

test('a function\'s parameter types follow from its declarations', (t) => {
  const decls = { i: text('id').req(), n: int('count'), l: list('names') };
  const p: Params<typeof decls> = { i: 'x' };
  // @ts-expect-error a required parameter cannot be left out
  const missing: Params<typeof decls> = { n: 1 };
  // @ts-expect-error a parameter has its declared type
  const wrong: Params<typeof decls> = { i: 'x', n: 'one' };
  t.truthy(p && missing && wrong);
});

test('a plain seconds parameter (a drop-in plugin\'s) is a wait all the same: 0 up to what a timer can wait', (t) => {
  const plain = { type: 'seconds', required: false, description: 'a wait' } as const;
  t.throws(() => fromCall('d', plain, -1), { message: `parameter d: seconds, 0 to ${MAX_TIMER_SECONDS}` });
  t.throws(() => fromCall('d', plain, MAX_TIMER_SECONDS + 1), { message: `parameter d: seconds, 0 to ${MAX_TIMER_SECONDS}` });
  t.deepEqual(jsonSchema(plain), { type: 'number', minimum: 0, maximum: MAX_TIMER_SECONDS });
});

test('a registered handler\'s parameters are typed by the declaration, without a word in the handler', (t) => {
  const registry = new FunctionRegistry();
  registry.register('test', {
    name: 'typed', permission: 'none', description: '',
    params: { i: text('id').req(), w: seconds('wait'), l: list('names') },
    handler(p) {
      const i: string = p.i;
      const w: number | undefined = p.w;
      const l: string[] | undefined = p.l;
      // @ts-expect-error an optional parameter may be absent
      const must: number = p.w;
      return { i, w, l, must };
    },
  });
  const decl = registry.get('typed');
  t.deepEqual(registry.invoke(decl, { i: 5, w: '1.5', l: 'a,b', k: 'key' }, { ip: '', transport: 'test', headers: {} }),
    { i: '5', w: 1.5, l: ['a', 'b'], must: 1.5 });
});
