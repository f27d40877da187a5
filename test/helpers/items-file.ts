import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

/**
 * The items a controller left on disk, read as any outside tool would read
 * them, from the documented format alone (plugins/items/README.md "The items file"): the items
 * file `{"version", "journal": n, "items"}`, then each journal segment
 * `<file>.journal.<m>` with m > n, in order, record by record (u32 LE
 * length, u32 LE CRC-32, JSON `{"<oid>": state | null}`), stopping at a torn
 * record.
 */
export function readItemsState(file: string): { items: Record<string, any>; segments: number[]; doc: any } {
  const doc = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : undefined;
  const items: Record<string, any> = { ...(doc?.items ?? {}) };
  const held: number = doc?.journal ?? 0;
  const prefix = `${path.basename(file)}.journal.`;
  const segments = fs.readdirSync(path.dirname(file))
    .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
    .map((n) => Number(n.slice(prefix.length)))
    .sort((a, b) => a - b);
  for (const seq of segments.filter((s) => s > held)) {
    const data = fs.readFileSync(`${file}.journal.${seq}`);
    for (let at = 0; at + 8 <= data.length;) {
      const len = data.readUInt32LE(at);
      const payload = data.subarray(at + 8, at + 8 + len);
      if (payload.length < len || zlib.crc32(payload) !== data.readUInt32LE(at + 4)) break;
      for (const [oid, state] of Object.entries(JSON.parse(payload.toString('utf8')) as Record<string, unknown>)) {
        if (state === null) delete items[oid];
        else items[oid] = state;
      }
      at += 8 + len;
    }
  }
  return { items, segments, doc };
}

/** The records of every journal segment of the items file, in order: their item states and payload bytes. */
export function journalRecords(file: string): { states: number; bytes: number }[] {
  const dir = path.dirname(file);
  const prefix = `${path.basename(file)}.journal.`;
  const out: { states: number; bytes: number }[] = [];
  const segments = fs.readdirSync(dir).filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
    .sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)));
  for (const name of segments) {
    const data = fs.readFileSync(path.join(dir, name));
    for (let at = 0; at + 8 <= data.length;) {
      const len = data.readUInt32LE(at);
      const payload = data.subarray(at + 8, at + 8 + len);
      if (payload.length < len || zlib.crc32(payload) !== data.readUInt32LE(at + 4)) break;
      out.push({ states: Object.keys(JSON.parse(payload.toString('utf8'))).length, bytes: len });
      at += 8 + len;
    }
  }
  return out;
}
