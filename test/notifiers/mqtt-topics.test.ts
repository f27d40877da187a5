import test from 'ava';
import { StateTopics, StateFields } from '../../plugins/notifiers/mqtt/topics';

test('state topics are built once per item and notifier, in StateFields order, then the item topic, under the space', (t) => {
  const topics = new StateTopics('plant/', 10);
  const a = topics.of('unit:g/u', 'unit', 'g/u');
  t.deepEqual([...a], [...StateFields.map((f) => `plant/unit/g/u/${f}`), 'plant/unit/g/u']);
  t.is(topics.of('unit:g/u', 'unit', 'g/u'), a, 'the same strings the next time');
  t.deepEqual([...new StateTopics('', 10).of('sensor:env/t', 'sensor', 'env/t')].slice(0, 2), ['sensor/env/t/status', 'sensor/env/t/value']);
});

test('the state topics memory is bounded: at its bound it starts again, and topics stay right', (t) => {
  const topics = new StateTopics('s/', 3);
  for (let i = 0; i < 10; i++) {
    t.is(topics.of(`sensor:g/s${i}`, 'sensor', `g/s${i}`)[1], `s/sensor/g/s${i}/value`);
    t.true(topics.size <= 3, `${topics.size} items remembered`);
  }
  t.is(topics.of('sensor:g/s0', 'sensor', 'g/s0')[0], 's/sensor/g/s0/status', 'a forgotten item is built again');
});
