import type http from 'node:http';
import type { ItemsService } from '../../items/contract';
import { itemSelected, type Subscription } from '../contract';
import { itemFamilies, metricStem } from './exposition';

/** The page goes out in pieces of about this many characters: memory stays bounded whatever the item count. */
export const PAGE_CHUNK = 64 * 1024;
/** Items written between two turns of the event loop: a big page does not hold the controller up. */
const ITEMS_PER_TURN = 1000;

/** What one scrape wrote. */
export interface PageFigures {
  /** items on the page */
  items: number;
  /** items the subscription covers past max_items, not on the page */
  leftOut: number;
  /** items whose metric name an earlier item of the page already had (names differing only in `.`/`-`/`_`) */
  clashes: number;
}

/** Write a chunk, waiting while the client is slow; false once the client is gone. */
async function put(res: http.ServerResponse, chunk: string): Promise<boolean> {
  if (res.destroyed) return false;
  if (res.write(chunk)) return true;
  await new Promise<void>((resolve) => {
    const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
    res.on('drain', done);
    res.on('close', done);
  });
  return !res.destroyed;
}

/**
 * The metrics page: every item the state subscriptions cover, read from the
 * items now (as 3.3 did at each request, so an item not updated since the
 * start is there with the state it was loaded with), at most `maxItems` of
 * them, in the items' order. No state subscription: a page of one empty
 * line, as 3.3. The headers are sent already.
 */
export async function writePage(res: http.ServerResponse, items: ItemsService | undefined, subs: Subscription[], maxItems: number): Promise<PageFigures> {
  const figures: PageFigures = { items: 0, leftOut: 0, clashes: 0 };
  const state = subs.filter((s) => s.subject === 'state');
  const stems = new Set<string>();
  let buf = '';
  let seen = 0;
  for (const info of state.length && items ? items.list() : []) {
    if (++seen % ITEMS_PER_TURN === 0) {
      await new Promise((resolve) => setImmediate(resolve));
      if (res.destroyed) return figures;
    }
    if (!state.some((s) => itemSelected(s, info))) continue;
    if (figures.items >= maxItems) { figures.leftOut++; continue; }
    const st = items!.state(info.oid);
    if (!st) continue; // destroyed meanwhile
    const stem = metricStem(st.oid);
    if (stems.has(stem)) { figures.clashes++; continue; }
    stems.add(stem);
    buf += itemFamilies(stem, st.status, st.value);
    figures.items++;
    if (buf.length >= PAGE_CHUNK) {
      if (!(await put(res, buf))) return figures;
      buf = '';
    }
  }
  res.end(figures.items ? buf : '\n');
  return figures;
}
