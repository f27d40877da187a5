import path from 'node:path';
import { discoverPlugins } from '../../../core/plugins';
import type { SettingsOwner } from '../../../core/settings/check';
import type { NotifierType } from '../contract';
import { declaredTypes } from '../host';

export interface TypeCatalogue {
  /** by type name and alias */
  types: Map<string, NotifierType>;
  /** plugins that could not be used, with the reason */
  problems: string[];
  /** every loaded plugin: who declares settings, for the same settings check as the controller's */
  plugins: SettingsOwner[];
}

/**
 * The plugins a controller would have, found by the controller's own loader
 * (core/plugins.ts discoverPlugins: the built-in ones and the controller
 * directory's drop-ins) without starting them, with the notifier types they
 * declare (`plugin.notifier`).
 */
export async function loadTypes(controllerDir: string): Promise<TypeCatalogue> {
  const problems: string[] = [];
  const loaded = await discoverPlugins(path.join(controllerDir, 'plugins'), (file, code, reason) => problems.push(`${file}: ${reason} [${code}]`));
  const plugins = loaded.map((l) => ({ ...l.def, file: l.file }));
  const types = declaredTypes(plugins, (def, why) => problems.push(`${plugins.find((p) => p.name === def.name)?.file ?? def.name}: ${why}`));
  return { types, problems, plugins };
}
