import test from 'ava';
import type { BusSubject } from '../../core/bus';
import type { Subscription } from '../../plugins/notifiers/contract';
import { EventRouter, ROUTE_CACHE_MAX, type Routed } from '../../plugins/notifiers/host/router';

/** A notifier as the router sees it, recording what it got and how often it was asked whether it takes events. */
function notifier(events: Subscription[], on = true) {
  const n = { events, on, asked: 0, got: [] as [BusSubject, unknown][], accepts() { n.asked++; return n.on; }, push(s: BusSubject, e: unknown) { n.got.push([s, e]); } };
  return n satisfies Routed;
}

const state = (oid: string, value = '1') => {
  const [type, full] = oid.split(':');
  const id = full.split('/').pop()!;
  const group = full.slice(0, -(id.length + 1));
  return { oid, type, group, id, full_id: full, status: 1, value };
};

test('state events reach the notifiers whose subscriptions select the item, and only while they take events', (t) => {
  const all = notifier([{ subject: 'state', types: ['#'], groups: ['#'] }]);
  const sensors = notifier([{ subject: 'state', types: ['sensor'], groups: ['plant/+'] }]);
  const one = notifier([{ subject: 'state', items: ['lvar:x/v'] }]);
  const off = notifier([{ subject: 'state', types: ['#'], groups: ['#'] }], false);
  const r = new EventRouter([all, sensors, one, off]);
  r.route('state', state('sensor:plant/a/t'));
  r.route('state', state('lvar:x/v'));
  r.route('state', { status: 1 }); // names no item
  off.on = true; // enabled later: the next event reaches it
  r.route('state', state('sensor:plant/a/t', '2'));
  t.deepEqual(all.got.map(([, e]) => (e as { oid: string }).oid), ['sensor:plant/a/t', 'lvar:x/v', 'sensor:plant/a/t']);
  t.deepEqual(sensors.got.map(([, e]) => (e as { value: string }).value), ['1', '2']);
  t.deepEqual(one.got.map(([, e]) => (e as { oid: string }).oid), ['lvar:x/v']);
  t.deepEqual(off.got.map(([, e]) => (e as { value: string }).value), ['2']);
});

test('an action status and a log level are checked per event', (t) => {
  const done = notifier([{ subject: 'action', types: ['#'], groups: ['#'], action_status: ['completed'] }]);
  const warnings = notifier([{ subject: 'log', level: 30 }]);
  const r = new EventRouter([done, warnings]);
  const action = (status: string) => ({ item_oid: 'unit:u/a', item_type: 'unit', item_group: 'u', item_id: 'a', status });
  r.route('action', action('running'));
  r.route('action', action('completed'));
  r.route('log', { l: 20, msg: 'info' });
  r.route('log', { l: 40, msg: 'error' });
  t.deepEqual(done.got.map(([, e]) => (e as { status: string }).status), ['completed']);
  t.deepEqual(warnings.got.map(([, e]) => (e as { msg: string }).msg), ['error']);
});

test('an event costs the notifiers subscribed to its item, not those configured', (t) => {
  const mine = notifier([{ subject: 'state', items: ['sensor:g/s0'] }]);
  const others = Array.from({ length: 49 }, (_, i) => notifier([{ subject: 'state', items: [`sensor:g/s${i + 1}`] }]));
  const r = new EventRouter([...others, mine]);
  for (let i = 0; i < 100; i++) r.route('state', state('sensor:g/s0', String(i)));
  t.is(mine.got.length, 100);
  t.is(mine.asked, 100);
  // the others are never even asked whether they take events
  t.is(others.reduce((n, o) => n + o.asked + o.got.length, 0), 0);
});

test('the remembered routes are bounded', (t) => {
  const all = notifier([{ subject: 'state', types: ['#'], groups: ['#'] }]);
  const r = new EventRouter([all]);
  for (let i = 0; i < ROUTE_CACHE_MAX + 10; i++) r.route('state', state(`sensor:g/s${i}`));
  t.true(r.size <= ROUTE_CACHE_MAX);
  t.is(all.got.length, ROUTE_CACHE_MAX + 10);
});
