import test from 'ava';
import fs from 'node:fs';
import { startBroker, Subscriber } from '../helpers/broker';
import { until } from '../helpers/wait';
import { Receiver } from '../helpers/receiver';
import { startLike332 } from './ours';
import { compareFrames, FRAMES, hookFrame, mqttFrame, notifierFiles, trigger, type Frames } from './frames';
import { reconcile } from './match';
import { FRAME_DIFFERENCES } from './differences';
import { SETUP } from './calls';

test('web hook requests and MQTT messages are those EVA ICS 3.3.2 sent for the same events, but for the listed differences', async (t) => {
  const recorded = JSON.parse(fs.readFileSync(FRAMES, 'utf8')) as Frames;
  const rcv = await Receiver.start(t);
  const broker = await startBroker(t);
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe('#');
  // 3.3's files as its uc-notifier wrote them, pointed at this test's receiver and broker
  const files = notifierFiles();
  files.hj.uri = `http://127.0.0.1:${rcv.port}/hook`;
  files.eva_1.host = broker.host;
  files.eva_1.port = broker.port;
  const found = [];
  // a file 3.3.2 loads but this controller refuses is a difference; the test goes on without what it refuses
  let ctl;
  try {
    ctl = await startLike332(t, files);
  } catch (e) {
    found.push({ call: 'frames:start', transport: 'get' as const, path: 'start', eva332: 'starts', ours: (e as Error).message });
    for (const f of Object.values(files)) f.events = (f.events as { subject: string }[]).filter((x) => x.subject !== 'server');
    ctl = await startLike332(t, files);
  }
  const { url } = ctl;
  await until('the web hook test request', () => rcv.requests.length > 0, 30_000);
  await trigger(url, SETUP.secrets.master);
  // as many of each as 3.3 sent, or the time it had (it waited 4 s after the last call)
  const want = (f: Frames) => ({ hook: f.hook.length, mqtt: f.mqtt.length });
  await until('the frames 3.3 sent', () => rcv.requests.length >= want(recorded).hook && sub.messages.length >= want(recorded).mqtt, 15_000).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 1000));
  // the server events of a stop (3.3 was stopped the same way when recorded)
  await ctl.stop();
  await new Promise((r) => setTimeout(r, 1000));
  const ours: Frames = {
    hook: rcv.requests.map((r) => hookFrame(r.method, r.url.toString(), r.contentType, r.authorization, r.body)),
    mqtt: sub.messages.map((m) => mqttFrame(m.topic, m.payload, m.retain)),
  };
  found.push(...compareFrames(recorded, ours));
  const { unlisted, stale } = reconcile(FRAME_DIFFERENCES, found);
  t.log(`3.3.2: ${recorded.hook.length} web hook requests, ${recorded.mqtt.length} MQTT messages; ours: ${ours.hook.length}, ${ours.mqtt.length}; ${found.length} differences`);
  t.deepEqual(unlisted.map((d) => JSON.stringify(d)), [], 'frame differences from 3.3.2 not in differences.ts');
  t.deepEqual(stale.map((l) => JSON.stringify(l)), [], 'differences.ts lists frame differences that no longer occur');
});
