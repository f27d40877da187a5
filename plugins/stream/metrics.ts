import type { MetricSample } from '../../core/metrics';
import type { StreamStats } from './contract';

/** Each figure of StreamStats as a family eva_stream_<name> of GET /metrics. */
const Families: Record<keyof StreamStats, Omit<MetricSample, 'value'>> = {
  clients: { name: 'stream_clients', help: 'event stream connections open now, authenticated or not' },
  accepted: { name: 'stream_accepted_total', help: 'event stream connections accepted', type: 'counter' },
  unauthenticated: { name: 'stream_unauthenticated', help: 'event stream connections open now and not yet authenticated' },
  refused: { name: 'stream_refused_total', help: 'event stream connections refused at ws_max_clients', type: 'counter' },
  evicted: { name: 'stream_evicted_total', help: 'event stream connections not yet authenticated closed to make room for newer ones', type: 'counter' },
  dropped_slow: { name: 'stream_dropped_slow_total', help: 'event stream clients disconnected because their send buffer overflowed', type: 'counter' },
  dropped_dead: { name: 'stream_dropped_dead_total', help: 'event stream clients disconnected because they missed a pong', type: 'counter' },
  sent: { name: 'stream_sent_total', help: 'event stream messages sent', type: 'counter' },
  replaying: { name: 'stream_replaying', help: 'event stream clients being sent the events they missed now' },
  replayed: { name: 'stream_replayed_total', help: 'event stream events sent from the ring to clients that resumed', type: 'counter' },
  gaps: { name: 'stream_gaps_total', help: 'event stream gap messages (a since older than the ring or of another run)', type: 'counter' },
  ring_events: { name: 'stream_ring_events', help: 'events the event stream keeps now for clients that resume' },
  ring_bytes: { name: 'stream_ring_bytes', help: 'bytes of the events the event stream keeps now' },
  ring_dropped: { name: 'stream_ring_dropped_total', help: 'events dropped from the event stream ring at its bounds', type: 'counter' },
};

export function streamMetrics(stats: StreamStats): MetricSample[] {
  return Object.entries(Families).map(([k, m]) => ({ ...m, value: stats[k as keyof StreamStats] }));
}
