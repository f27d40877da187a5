import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { pickDefinition } from '../../../core/plugins';
import type { NotifierType } from '../api';
import { typeProblem } from '../host/settings';

/** Where the built-in notifier type plugins are after the build (dist/plugins/notifiers). */
const BUILTIN_DIR = path.resolve(__dirname, '..');

export interface TypeCatalogue {
  /** by type name and alias */
  types: Map<string, NotifierType>;
  /** drop-in files that could not be read, with the reason */
  problems: string[];
}

function jsFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((n) => /\.m?js$/.test(n)).sort().map((n) => path.join(dir, n));
}

/**
 * The notifier types a controller would have, read from the plugin modules
 * without starting them: the built-in ones and the controller directory's
 * drop-ins (plugins/*.js|.mjs), each exporting its type as `plugin.notifier`.
 */
export async function loadTypes(controllerDir: string): Promise<TypeCatalogue> {
  const types = new Map<string, NotifierType>();
  const problems: string[] = [];
  const files = [...jsFiles(BUILTIN_DIR).map((f) => ({ f, builtin: true })), ...jsFiles(path.join(controllerDir, 'plugins')).map((f) => ({ f, builtin: false }))];
  for (const { f, builtin } of files) {
    let mod: unknown;
    try {
      // built-in plugins are CommonJS (dist/), drop-ins may be ESM: only import() reads both, require() keeps built-ins in one instance
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      mod = builtin ? require(f) : await import(pathToFileURL(f).href);
    } catch (err) {
      problems.push(`${f}: ${(err as Error).message}`);
      continue;
    }
    const def = pickDefinition(mod);
    if (def?.kind !== 'notifier') continue;
    const wrong = typeProblem(def.notifier);
    if (wrong) {
      problems.push(`${f}: ${wrong}`);
      continue;
    }
    const t = def.notifier as NotifierType;
    for (const name of [t.name, ...(t.aliases ?? [])]) if (!types.has(name)) types.set(name, t);
  }
  return { types, problems };
}
