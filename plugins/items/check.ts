import type { Paths } from '../../core/paths';
import type { Finding } from '../../core/settings/schema';
import { readIniFile } from '../../core/settings/check';
import { entryOf } from '../../core/settings/usability';
import { readNotifierFiles } from '../notifiers/contract';
import { parseBinding } from './binding';

/**
 * [server] mqtt_update_default must name an mqtt notifier of this
 * controller (a file in runtime/<product>_notify.d): every item created
 * would otherwise take a binding set_prop refuses. An error at its line
 * (exit 3). What the notifier file says is the notifier plugin's to judge.
 */
export function checkMqttUpdateDefault(paths: Paths): Finding[] {
  const doc = readIniFile(paths.configFile);
  const e = entryOf(doc, 'server', 'mqtt_update_default');
  const text = e?.value.trim();
  if (!e || !text) return [];
  const error = (why: string): Finding[] => [{ level: 'error', file: doc.file, line: e.line, message: `[server] mqtt_update_default: ${why}` }];
  const b = parseBinding(text);
  if (!b) return error(`"${text}" is not <mqtt notifier id>[:qos] (qos 0, 1 or 2)`);
  const f = readNotifierFiles(paths.notifyDir).find((n) => n.id === b.id);
  if (!f) return error(`no notifier ${b.id} (no ${b.id}.json in ${paths.notifyDir})`);
  if (f.error) return [];
  const type = (f.raw as { type?: unknown } | null)?.type;
  return type === 'mqtt' ? [] : error(`notifier ${b.id} is of type ${JSON.stringify(type)}, not mqtt`);
}
