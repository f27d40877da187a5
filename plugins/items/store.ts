import fs from 'node:fs';
import { AtomicFile } from '../../core/store/atomic';
import type { ModuleLogger } from '../../core/log';
import { parseOid, type Oid } from './oid';
import type { ItemProps, StoredItem } from './item';

/** runtime/<product>_items.json: `{"version": 1, "items": {"<oid>": {status, value, t, ...props}}}`. */
const FORMAT_VERSION = 1;

export interface LoadedItem { o: Oid; props: ItemProps; stored: StoredItem }

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** Check one stored entry; undefined when it cannot be used. */
function readEntry(oid: string, entry: unknown): LoadedItem | undefined {
  if (!entry || typeof entry !== 'object') return undefined;
  const raw = entry as Record<string, unknown>;
  const o = parseOid(oid);
  if (typeof raw.status !== 'number' || !Number.isInteger(raw.status)) return undefined;
  if (raw.value !== null && typeof raw.value !== 'string') return undefined;
  const props: ItemProps = {
    mqtt_update: str(raw.mqtt_update),
    mqtt_control: str(raw.mqtt_control),
    action_enabled: raw.action_enabled !== false,
    action_timeout: typeof raw.action_timeout === 'number' && raw.action_timeout > 0 ? raw.action_timeout : null,
  };
  const t = typeof raw.t === 'number' && Number.isFinite(raw.t) ? raw.t : Date.now() / 1000;
  return { o, props, stored: { ...props, status: raw.status, value: raw.value, t } };
}

/**
 * Reads and writes the items file. Writes are atomic and grouped
 * (AtomicFile: the changes made while a write is under way go together in the next).
 */
export class ItemsFile {
  private readonly file: AtomicFile;

  constructor(readonly path: string, private readonly log: ModuleLogger) {
    this.file = new AtomicFile(path);
  }

  /**
   * Load every usable item. A file that does not parse is moved aside (kept
   * for the operator, never overwritten) and the controller starts without
   * items; a bad entry is skipped with a warning.
   */
  load(): LoadedItem[] {
    if (!fs.existsSync(this.path)) return [];
    let items: Record<string, unknown>;
    try {
      const doc = JSON.parse(fs.readFileSync(this.path, 'utf8')) as { items?: unknown } | null;
      if (!doc || typeof doc !== 'object' || typeof doc.items !== 'object' || doc.items === null) throw new Error('no "items" object');
      items = doc.items as Record<string, unknown>;
    } catch (err) {
      const aside = `${this.path}.corrupt-${Date.now()}`;
      fs.renameSync(this.path, aside);
      this.log.error(`${this.path} is unreadable (${(err as Error).message}): moved to ${aside}, starting without items`);
      return [];
    }
    const out: LoadedItem[] = [];
    for (const [oid, raw] of Object.entries(items)) {
      let entry: LoadedItem | undefined;
      try { entry = readEntry(oid, raw); } catch { entry = undefined; }
      if (entry) out.push(entry);
      else this.log.warning(`${this.path}: item ${oid} is malformed, skipped`);
    }
    return out;
  }

  /** Write what `produce` returns (called when the write starts, so it is the newest state). */
  write(produce: () => Record<string, StoredItem>): Promise<void> {
    return this.file.write(() => JSON.stringify({ version: FORMAT_VERSION, items: produce() }, null, 1) + '\n');
  }

  flush(): Promise<void> {
    return this.file.flush();
  }

  /** The newest write asked for: resolves once it is on disk, rejects when it failed. */
  written(): Promise<void> {
    return this.file.written();
  }
}
