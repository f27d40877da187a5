/** What the node has taken of its primary host's STATEs so far. */
export interface HostSeen {
  /** the timestamp of the last STATE taken (0: none had one) */
  timestamp: number;
  /** whether any STATE with a timestamp has been taken */
  timestamped: boolean;
}

/** A STATE to act on (`timestamp` undefined: it had none), one older than the last taken, or one refused (`what`: a fixed phrase). */
export type HostStateVerdict =
  | { kind: 'take'; online: boolean; timestamp?: number }
  | { kind: 'older' }
  | { kind: 'refused'; what: string; detail: string };

/**
 * Judge a Sparkplug 3.0 STATE payload, JSON `{"online": bool, "timestamp": ms}`,
 * against what was taken before and the node's clock (`now`, ms).
 *
 * - A timestamp is a positive finite number; anything else is none.
 * - One older than the last taken is ignored (a stale retained state, a late will).
 * - One further ahead of `now` than `maxAheadMs` is refused: taken, it would
 *   make every real STATE look older until the clock caught up with it
 *   (a forged far-future state would blind the node to its host).
 * - One without a timestamp is taken only while none with a timestamp has
 *   been (a host that sends none still works); after that it is refused, so
 *   it can never override a timestamped state.
 */
export function hostState(payload: Buffer, seen: HostSeen, now: number, maxAheadMs: number): HostStateVerdict {
  let st: { online?: unknown; timestamp?: unknown } | null;
  try { st = JSON.parse(payload.toString('utf8')) as typeof st; } catch { st = null; }
  if (!st || typeof st !== 'object' || typeof st.online !== 'boolean') {
    return { kind: 'refused', what: 'not a STATE (JSON with a boolean "online")', detail: `${payload.length} bytes` };
  }
  const ts = st.timestamp;
  if (typeof ts !== 'number' || !Number.isFinite(ts) || ts <= 0) {
    if (seen.timestamped) return { kind: 'refused', what: 'a STATE without a timestamp after one with a timestamp', detail: `online ${st.online}` };
    return { kind: 'take', online: st.online };
  }
  if (ts > now + maxAheadMs) {
    return { kind: 'refused', what: 'a STATE timestamped too far ahead of this node\'s clock', detail: `online ${st.online}, ${Math.round((ts - now) / 1000)} s ahead (host_state_max_ahead ${maxAheadMs / 1000} s)` };
  }
  if (ts < seen.timestamp) return { kind: 'older' };
  return { kind: 'take', online: st.online, timestamp: ts };
}
