import path from 'node:path';
import type { ModuleLogger } from '../../core/log';

/**
 * Watch a folder's files (not its subfolders) and call `changed(name)` once
 * a file has been quiet for `settleMs`: an editor's save (often unlink +
 * add, or several writes) becomes one call. Returns the way to stop.
 */
export async function watchFolder(
  dir: string,
  settleMs: number,
  changed: (name: string) => void,
  log: ModuleLogger,
): Promise<() => Promise<void>> {
  // chokidar 5 is an ES module: loaded with import(), which the build keeps as it is
  const { watch } = await import('chokidar');
  const pending = new Map<string, NodeJS.Timeout>();
  const watcher = watch(dir, { ignoreInitial: true, depth: 0 });
  const touch = (file: string) => {
    if (path.dirname(path.resolve(file)) !== path.resolve(dir)) return;
    const name = path.basename(file);
    clearTimeout(pending.get(name));
    pending.set(name, setTimeout(() => {
      pending.delete(name);
      changed(name);
    }, settleMs));
  };
  watcher.on('add', touch).on('change', touch).on('unlink', touch);
  watcher.on('error', (err) => log.error(`watching ${dir}: ${(err as Error).message}`));
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  return async () => {
    for (const t of pending.values()) clearTimeout(t);
    pending.clear();
    await watcher.close();
  };
}
