import type { Subject } from '../notifier-type';

/**
 * What an event holds besides its variable texts: the object, its keys, the
 * oid and names, numbers. A guess on the generous side; it only has to keep
 * a queue of small events from looking free.
 */
export const EVENT_OVERHEAD = 256;

const len = (v: unknown): number => (typeof v === 'string' ? v.length : 0);

/**
 * About the bytes an event keeps alive in a queue, in characters (as the
 * memory log counts them): the overhead plus the texts that can be large,
 * a value (state), a script's output (action), a message (log). A few
 * property reads per event: no encoding, nothing walked.
 */
export function eventSize(subject: Subject, event: unknown): number {
  if (!event || typeof event !== 'object') return EVENT_OVERHEAD;
  const e = event as Record<string, unknown>;
  switch (subject) {
    case 'state':
      return EVENT_OVERHEAD + len(e.value) + len(e.nvalue);
    case 'action':
      return EVENT_OVERHEAD + len(e.nvalue) + len(e.out) + len(e.err);
    case 'log':
      return EVENT_OVERHEAD + len(e.msg) + len(e.mod) + len(e.h);
    default:
      return EVENT_OVERHEAD;
  }
}
