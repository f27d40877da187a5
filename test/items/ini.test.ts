import test from 'ava';
import { parseIni } from '../../core/ini';
import { startItemsController } from '../helpers/items';
import { Keys } from '../helpers/controller';

test('ini values keep # and ; as EVA ICS read them (no inline comments)', (t) => {
  const doc = parseIni([
    '# a comment', '; another', '[k]', 'groups = #', 'items = unit:g/a#b, x;y', 'path = C:\\dir\\x', 'quoted = "g1/#"', 'empty =',
  ].join('\n'));
  t.deepEqual({ ...doc.k }, { groups: '#', items: 'unit:g/a#b, x;y', path: 'C:\\dir\\x', quoted: 'g1/#', empty: '' });
});

test('a key file written as EVA ICS writes it (groups = # bare) gives the key every group', async (t) => {
  const eva = `[masterkey]\nkey = ${Keys.master}\nmaster = yes\nhosts_allow = 127.0.0.1\n\n`
    + `[op]\nkey = ${Keys.ops}\ngroups = #\nallow = device\nhosts_allow = 127.0.0.1\n`;
  const { ok, client } = await startItemsController(t, { keysIni: eva });
  await ok('create', { i: 'unit:any/where' });
  t.like(await client.ok('state', { k: Keys.ops, i: 'unit:any/where' }), { status: 0 });
  t.is((await client.ok('action', { k: Keys.ops, i: 'unit:any/where', s: 1, w: 10 })).status, 'completed');
});
