/**
 * The contract of the event stream (service `stream`, plugin `stream`), for
 * plugins that report on it (metrics). Types only.
 */
export interface StreamStats {
  /** connections open now, authenticated or not */
  clients: number;
  /** of those, not yet authenticated (their own pool: ws_max_unauthenticated) */
  unauthenticated: number;
  /** connections accepted since start */
  accepted: number;
  /** connections refused at ws_max_clients */
  refused: number;
  /** connections not yet authenticated closed to make room for newer ones (ws_max_unauthenticated) */
  evicted: number;
  /** clients disconnected because their send buffer overflowed */
  dropped_slow: number;
  /** clients disconnected because they missed a pong */
  dropped_dead: number;
  /** messages sent (events and answers) */
  sent: number;
  /** clients being sent the events they missed (subscribe with since) now */
  replaying: number;
  /** of the messages sent, events sent from the ring to clients that resumed (subscribe with since) */
  replayed: number;
  /** gap messages: a since older than the ring or of another run */
  gaps: number;
  /** events kept in the ring now (ws_replay_events) */
  ring_events: number;
  /** their bytes (ws_replay_bytes) */
  ring_bytes: number;
  /** events dropped from the ring at a bound since start */
  ring_dropped: number;
}

export interface StreamService {
  stats(): StreamStats;
}

/** Close codes the stream uses besides the standard ones (plugins/stream/README.md). */
export const CloseCodes = {
  /** no valid key or token in the first message, or it is no longer valid */
  unauthorized: 4001,
  /** the client did not read fast enough: its send buffer overflowed */
  too_slow: 4008,
  /** no room now: ws_max_clients reached at authentication, or a newer connection needed the place of one not yet authenticated */
  try_again: 1013,
} as const;

declare module '../../core/plugin' {
  interface Services {
    stream: StreamService;
  }
}
