import test from 'ava';
import { startController, Keys, type Client } from '../helpers/controller';
import { keysIni } from '../helpers/keys';
import { until } from '../helpers/wait';

const m = { k: Keys.master };
const from = (ip: string) => ({ 'X-Real-IP': ip });
const LOCKED = /too many failed key checks from this address, retry in \d+ s/;
const wrong = (tag: string, i: number) => `guess-${tag}-${String(i).padStart(4, '0')}-abcdefghijklmnop`;

/** The address /metrics is read from: its master key counts among the known keys too. */
const MONITOR = '10.7.9.9';

/** The kernel's figures of the auth throttle, from /metrics. */
async function figures(client: Client) {
  const text = await (await fetch(`${client.url}/metrics`, { headers: { 'X-Auth-Key': Keys.master, ...from(MONITOR) } })).text();
  const get = (name: string) => Number(new RegExp(`^eva_${name} (\\d+)$`, 'm').exec(text)?.[1]);
  return { waiting: get('auth_waiting'), known: get('auth_known_keys'), bytes: get('auth_known_bytes') };
}

/** The message of a call's refusal ('' when it passed). */
async function refusal(client: Client, k: string, ip: string): Promise<string> {
  const r = await client.rpc('test', { k }, from(ip));
  return r.error ? r.error.message : '';
}

test('an address full of guesses: the master key and a token that passed from it are answered 30 of 30; a new guess, or a key that never passed there, refused unchecked', async (t) => {
  // a step of 60 s: the booked guesses stay ahead for the whole test
  const OTHER = 'otherotherotherotherotherotherotherotherotherotherotherother1234';
  const { client } = await startController(t, {
    ini: { webapi: { x_real_ip: true, login_free_failures: 5, login_pending_max: 8, login_delay: 60 } },
    keysIni: keysIni({ masterkey: { key: Keys.master, master: true, hosts_allow: '0.0.0.0/0' }, other: { key: OTHER, hosts_allow: '0.0.0.0/0' } }),
  });
  const ip = '10.7.0.1';
  // the clients working from that address (behind one NAT or proxy): a master key call, a login token
  t.is(await refusal(client, Keys.master, ip), '');
  const token = (await client.rpc('login', m, from(ip))).result.token as string;
  t.is(await refusal(client, token, ip), '');

  // 16 different wrong keys in flight: 5 free failures, 8 booked (answers held 60 s and more), the rest refused unchecked
  // (the held ones are still open when the test ends: their failure then is of no interest)
  const inFlight = Array.from({ length: 16 }, (_, i) => refusal(client, wrong('a', i), ip).catch(() => ''));
  await until('8 guesses booked', async () => (await figures(client)).waiting === 8);
  t.regex(await refusal(client, Keys.master.slice(0, -1) + 'X', ip), LOCKED, 'the address is full');

  const answers = { master: 0, token: 0, guesses: 0, other: 0 };
  for (let i = 0; i < 30; i++) {
    // and the guesses keep coming, new ones each round, beside the valid calls
    const [a, b, g1, g2] = await Promise.all([
      refusal(client, Keys.master, ip), refusal(client, token, ip), refusal(client, wrong('b', 2 * i), ip), refusal(client, wrong('b', 2 * i + 1), ip),
    ]);
    if (a === '') answers.master++;
    if (b === '') answers.token++;
    if (LOCKED.test(g1) && LOCKED.test(g2)) answers.guesses++;
    if (LOCKED.test(await refusal(client, OTHER, ip))) answers.other++;
  }
  t.deepEqual(answers, { master: 30, token: 30, guesses: 30, other: 30 });
  t.is((await figures(client)).waiting, 8, 'still full: no guess was checked meanwhile');

  // the token ends: from the full address it gets the answer of any other value, and is no longer remembered there
  const before = (await figures(client)).known;
  t.is((await client.rpc('logout', { k: token }, from(ip))).error, undefined);
  t.regex(await refusal(client, token, ip), LOCKED);
  t.is((await figures(client)).known, before - 1);
  t.is(await refusal(client, Keys.master, ip), '');
  void inFlight;
});

test('a key shorter than 16 characters is not remembered: from a full address it is refused unchecked like a guess', async (t) => {
  // set_key_prop refuses values this short; a key file may still hold one
  const { client: c2 } = await startController(t, {
    ini: { webapi: { x_real_ip: true, login_free_failures: 0, login_pending_max: 1, login_delay: 60 } },
    keysIni: keysIni({ masterkey: { key: Keys.master, master: true, hosts_allow: '0.0.0.0/0' }, short: { key: 'short-key-15chr', hosts_allow: '0.0.0.0/0' } }),
  });
  const ip = '10.7.1.1';
  t.is(await refusal(c2, 'short-key-15chr', ip), '');
  t.is(await refusal(c2, Keys.master, ip), '');
  const held = refusal(c2, wrong('s', 0), ip).catch(() => '');
  await until('the guess booked', async () => (await figures(c2)).waiting === 1);
  t.regex(await refusal(c2, 'short-key-15chr', ip), LOCKED);
  t.is(await refusal(c2, Keys.master, ip), '');
  void held;
});

test('known keys are bounded: login_clients_max addresses, 4 values each; past a bound the oldest is forgotten and is refused unchecked again', async (t) => {
  const { client } = await startController(t, { ini: { webapi: { x_real_ip: true, login_free_failures: 0, login_pending_max: 1, login_delay: 60, login_clients_max: 3 } } });
  const ips = ['10.7.2.1', '10.7.2.2', '10.7.2.3', '10.7.2.4', '10.7.2.5'];
  const tokens: Record<string, string[]> = {};
  for (const ip of ips) {
    // per address: the master key (login), four tokens, the master key again: the first token made room for it
    tokens[ip] = [];
    for (let i = 0; i < 4; i++) tokens[ip].push((await client.rpc('login', m, from(ip))).result.token as string);
    for (const tk of tokens[ip]) t.is(await refusal(client, tk, ip), '');
    t.is(await refusal(client, Keys.master, ip), '');
  }
  // reading the figures makes the monitor's address the newest: 10.7.2.4 and .5 are kept, with four values each
  const f = await figures(client);
  t.is(f.known, 2 * 4 + 1, 'three addresses (login_clients_max): two of four values, the monitor\'s one');
  // per address: 64, 48 a value, the name (2 bytes a character)
  t.is(f.bytes, 2 * (64 + 4 * 48 + 2 * 8) + (64 + 48 + 2 * 8), `${f.bytes} bytes`);
  t.log(`known keys at the bound: ${f.known} records, ${f.bytes} bytes`);

  // fill two addresses with a booked guess each: one forgotten (the oldest), one kept
  const held = [refusal(client, wrong('c', 0), ips[0]).catch(() => ''), refusal(client, wrong('c', 1), ips[4]).catch(() => '')];
  await until('two guesses booked', async () => (await figures(client)).waiting === 2);
  t.regex(await refusal(client, Keys.master, ips[0]), LOCKED, 'the forgotten address: refused unchecked');
  t.is(await refusal(client, Keys.master, ips[4]), '', 'the kept address: the master key passes');
  t.is(await refusal(client, tokens[ips[4]][3], ips[4]), '', 'and its newest token');
  t.regex(await refusal(client, tokens[ips[4]][0], ips[4]), LOCKED, 'its oldest token made room');
  void held;
});
