/**
 * The contract of the event stream (service `stream`, plugin `stream`), for
 * plugins that report on it (metrics). Types only.
 */
export interface StreamStats {
  /** connections open now, authenticated or not */
  clients: number;
  /** connections accepted since start */
  accepted: number;
  /** connections refused at ws_max_clients */
  refused: number;
  /** clients disconnected because their send buffer overflowed */
  dropped_slow: number;
  /** clients disconnected because they missed a pong */
  dropped_dead: number;
  /** messages sent (events and answers) */
  sent: number;
}

export interface StreamService {
  stats(): StreamStats;
}

/** Close codes the stream uses besides the standard ones (README, "Event stream"). */
export const CloseCodes = {
  /** no valid key or token in the first message, or it is no longer valid */
  unauthorized: 4001,
  /** the client did not read fast enough: its send buffer overflowed */
  too_slow: 4008,
} as const;

declare module '../../core/plugin' {
  interface Services {
    stream: StreamService;
  }
}
