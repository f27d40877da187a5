import test from 'ava';
import { Keys } from '../helpers/controller';
import { TestStream, startStreamController } from '../helpers/stream-client';
import { sleep } from '../helpers/wait';

const m = { k: Keys.master };
const STATE = [{ subject: 'state', types: ['#'], groups: ['#'] }];
/** Well within the ping round (30 s by default): the close must come from the change itself. */
const PROMPT = 5_000;

/** A dynamic key that may read everything, and a stream opened with it. */
async function streamOfNewKey(t: any, url: string, client: any, id: string) {
  const { key } = await client.ok('create_key', { ...m, i: id });
  await client.ok('set_key_prop', { ...m, i: id, p: 'groups', v: '#' });
  const s = await TestStream.open(t, url, key, STATE);
  await s.next((x) => x.s === 'state');
  return { key, s };
}

/** The stream closes 4001 within PROMPT, with the reason; nothing of the update made after the change reached it. */
async function closedPromptly(t: any, s: TestStream, client: any, started: number) {
  const closed = await Promise.race([s.closed, sleep(PROMPT).then(() => undefined)]);
  t.truthy(closed, `still open ${PROMPT} ms after the change`);
  t.is(closed!.code, 4001);
  t.true(performance.now() - started < PROMPT);
  await client.ok('update', { ...m, i: 'sensor:home/t1', v: String(Math.random()) });
  await sleep(200);
  t.false(s.messages.some((x) => x.s === 'state'), 'no event after the change');
}

for (const [what, change] of [
  ['regenerate_key', (client: any, id: string) => client.ok('regenerate_key', { ...m, i: id })],
  ['set_key_prop key', (client: any, id: string) => client.ok('set_key_prop', { ...m, i: id, p: 'key', v: 'a-brand-new-value-0123456789' })],
  ['set_key_prop hosts_allow', (client: any, id: string) => client.ok('set_key_prop', { ...m, i: id, p: 'hosts_allow', v: '10.0.0.0/8' })],
  ['destroy_key', (client: any, id: string) => client.ok('destroy_key', { ...m, i: id })],
] as const) {
  test(`${what}: a stream opened with the key closes at once (4001)`, async (t) => {
    const { url, client } = await startStreamController(t);
    const { s } = await streamOfNewKey(t, url, client, 'k1');
    const other = await TestStream.open(t, url, Keys.master, STATE); // another key's stream goes on
    await other.next((x) => x.s === 'state');
    const started = performance.now();
    await change(client, 'k1');
    await closedPromptly(t, s, client, started);
    t.true(s.messages.some((x) => x.s === 'error' && x.code === 2));
    t.like((await other.next((x) => x.s === 'state')).d[0], { oid: 'sensor:home/t1' });
  });
}

test('a change that takes nothing away (groups) keeps the stream; the new rights apply', async (t) => {
  const { url, client } = await startStreamController(t);
  const { s } = await streamOfNewKey(t, url, client, 'k1');
  await client.ok('set_key_prop', { ...m, i: 'k1', p: 'groups', v: 'other/#' });
  await client.ok('update', { ...m, i: 'sensor:home/t1', v: '1' });
  await client.ok('update', { ...m, i: 'sensor:other/t2', v: '2' });
  t.is((await s.next((x) => x.s === 'state')).d[0].oid, 'sensor:other/t2');
  t.is(s.ws.readyState, s.ws.OPEN);
});

test('logout ends a stream opened with the token at once; a stream with the key itself goes on', async (t) => {
  const { url, client } = await startStreamController(t);
  const { token } = await client.ok('login', m);
  const byToken = await TestStream.open(t, url, token, STATE);
  const byKey = await TestStream.open(t, url, Keys.master, STATE);
  await byToken.next((x) => x.s === 'state'); // the state at subscribe
  const started = performance.now();
  await client.ok('logout', { k: token });
  await closedPromptly(t, byToken, client, started);
  t.true(byToken.messages.some((x) => x.s === 'error' && /^token ended/.test(x.message)));
  t.is(byKey.ws.readyState, byKey.ws.OPEN);
});
