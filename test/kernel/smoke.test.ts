import fs from 'node:fs';
import test from 'ava';
import { startController, Keys } from '../helpers/controller';

test('test answers through both transports', async (t) => {
  const { client } = await startController(t);
  const direct = await client.get('test', { k: Keys.master });
  t.is(direct.status, 200);
  t.is(direct.body.result, 'OK');
  t.deepEqual(direct.body.acl, { key_id: 'masterkey', master: true, cdata: [] });
  const rpc = await client.rpc('test', { k: Keys.master });
  t.is(rpc.result.ok, true);
  t.is(rpc.result.product_code, 'uc');
});

test('a logged message cannot forge a record of its own in the log file', async (t) => {
  const { client, dir } = await startController(t);
  const forged = '2026-01-01T00:00:00.000Z CRITICAL controller: forged';
  t.is((await client.get('log_info', { k: Keys.master, m: `real\n${forged}\r${forged}\r\n${forged}` })).status, 200);
  const lines = fs.readFileSync(`${dir}/controller.log`, 'utf8').split('\n');
  t.true(lines.some((l) => / INFO sysapi: real$/.test(l)));
  // every line of the message is there, indented under its record
  t.is(lines.filter((l) => l === `    ${forged}`).length, 3);
  t.false(lines.some((l) => l.startsWith(forged)));
});
