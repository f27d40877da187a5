import test from 'ava';
import { sampleText, itemFamilies, metricStem, valueNumber } from '../../plugins/notifiers/prometheus/exposition';

test('item values are numbers as Python float() read them for 3.3; the rest are not exported', (t) => {
  const cases: [string | null, number | undefined][] = [
    [null, NaN], ['', NaN], ['22.5', 22.5], [' 2 ', 2], ['\t-3\n', -3], ['+1', 1], ['1_000', 1000], ['1_0.2_5', 10.25],
    ['.5', 0.5], ['5.', 5], ['1e3', 1000], ['1E-2', 0.01], ['1e1_0', 1e10], ['1e400', Infinity],
    ['inf', Infinity], ['-Infinity', -Infinity], ['+iNf', Infinity], ['nan', NaN], ['-NaN', NaN],
    ['open', undefined], ['1__0', undefined], ['_1', undefined], ['1_', undefined], ['.', undefined], ['e5', undefined],
    ['1e', undefined], ['0x10', undefined], ['0b1', undefined], ['1,5', undefined], ['1 2', undefined], ['infinit', undefined],
    [' ', undefined], ['--1', undefined], ['1.2.3', undefined],
  ];
  for (const [v, want] of cases) t.is(valueNumber(v), want, JSON.stringify(v));
});

test('a long value costs linear time', (t) => {
  const digits = '1'.repeat(1024 * 1024);
  const t0 = process.hrtime.bigint();
  t.is(valueNumber(digits), Infinity);
  t.is(valueNumber(`${digits}x`), undefined);
  t.is(valueNumber(`${'1_'.repeat(512 * 1024)}`), undefined);
  // generous: linear is milliseconds, quadratic would be minutes
  t.true(Number(process.hrtime.bigint() - t0) / 1e9 < 10);
});

test('values, names and families in the text format', (t) => {
  t.deepEqual([NaN, Infinity, -Infinity, 0, -0, 1e21, 2.5e-7].map(sampleText), ['NaN', '+Inf', '-Inf', '0', '0', '1e+21', '2.5e-7']);
  t.is(metricStem('sensor:env/temp1'), 'sensor:env:temp1');
  t.is(metricStem('unit:a/b/c-d.e'), 'unit:a:b:c_d_e');
  t.is(itemFamilies('sensor:env:x', 1, 'open'), '# TYPE sensor:env:x:status gauge\nsensor:env:x:status 1\n');
  t.is(itemFamilies('lvar:g:v', 0, null),
    '# TYPE lvar:g:v:status gauge\nlvar:g:v:status 0\n# TYPE lvar:g:v:value gauge\nlvar:g:v:value NaN\n');
});
