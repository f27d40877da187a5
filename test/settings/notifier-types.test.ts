import test from 'ava';
import { Keys, makeDir, startController } from '../helpers/controller';
import { runCli } from '../helpers/cli';
import { controllerLog } from '../helpers/notifiers';
import { until } from '../helpers/wait';

/**
 * list_notifier_types: notifier files described through the API from the
 * declarations the files are checked by, as rpc.discover's x-settings
 * describes etc/<product>.ini. Master only.
 */
test('list_notifier_types: the file fields, the common settings with type, default and range, each loaded type with its own', async (t) => {
  const { client } = await startController(t);
  const d = await client.ok('list_notifier_types', { k: Keys.master });
  t.deepEqual(Object.keys(d.fields).sort(), ['events', 'id', 'type']);
  t.like(d.common.timeout, { type: 'number', default: 0, min: 0, unit: 's' });
  t.like(d.common.queue_size, { type: 'int', default: 10_000, min: 1 });
  t.like(d.common.enabled, { type: 'bool', default: false });
  for (const c of Object.values(d.common) as { description: string }[]) t.true(c.description.length > 10);
  t.deepEqual(Object.keys(d.types).sort(), ['db', 'http', 'http-post', 'influxdb', 'json', 'mqtt', 'prometheus', 'sparkplug']);
  t.truthy(d.types.sparkplug.settings.primary_host_id, 'sparkplug: its primary host');
  t.truthy(d.types.json.settings.uri, 'json: its uri');
  t.truthy(d.types.mqtt.settings.qos, 'mqtt: its qos');
  t.like(await client.rpc('list_notifier_types', { k: Keys.plain }), { error: { code: 2 } }, 'master only');
});

test('list_notifier_types and the notifier command line\'s help name the same settings', async (t) => {
  const dir = makeDir(t);
  const { client } = await startController(t, { dir });
  const d = await client.ok('list_notifier_types', { k: Keys.master });
  const help = await runCli(t, ['-d', dir, '--help']);
  t.is(help.code, 0, help.err);
  // each setting opens a line of the help: "  timeout (...)" for the common ones, "    uri (...)" under a type
  for (const name of Object.keys(d.common)) t.regex(help.out, new RegExp(`^  ${name} \\(`, 'm'), name);
  for (const name of Object.keys(d.types.json.settings)) t.regex(help.out, new RegExp(`^    ${name} \\(`, 'm'), `json ${name}`);
});

test('a notifier type that declares a setting every notifier file has (timeout) is refused, naming it; the other types run', async (t) => {
  const run = await startController(t, {
    files: {
      'plugins/clash-notifier.js': `module.exports.plugin = {
        name: 'notifier-clash', kind: 'notifier', version: '1.0.0', needs: ['notifiers'],
        notifier: { name: 'clash', settings: { timeout: { type: 'number', description: 'a second timeout' } },
          create() { return { send: async () => undefined, test: async () => undefined, stop: async () => undefined }; } },
      };`,
    },
  });
  // the host refuses the type as it hears of the plugin: an error line naming both, the plugin itself started
  await until('the refusal logged', () => /plugin notifiers: taking plugin notifier-clash: setting timeout: every notifier file has it already/.test(controllerLog(run.dir)));
  const d = await run.client.ok('list_notifier_types', { k: Keys.master });
  t.false('clash' in d.types);
  t.true('json' in d.types);
});
