/**
 * An item's mqtt_update / mqtt_control: `<notifier id>`, `<id>:<qos>` (as
 * EVA ICS 3.3 writes it) or `<id>;<qos>` (as the spec writes it), qos 0-2.
 * Undefined when empty or malformed; qos undefined when none is named.
 */
export function parseBinding(text: string | undefined): { id: string; qos?: 0 | 1 | 2 } | undefined {
  const m = /^([^:;\s]+)(?:[:;]([012]))?$/.exec((text ?? '').trim());
  if (!m) return undefined;
  return m[2] === undefined ? { id: m[1] } : { id: m[1], qos: Number(m[2]) as 0 | 1 | 2 };
}
