import { invalidParams } from '../../core/errors';
import { topicFilterProblem } from '../notifiers/mqtt/contract';

/** A subscription as the API and runtime/<product>_cs.json write it, and what it means. */
export interface ParsedTopic {
  /** the string exactly as written: `<topic>` or `<notifier_id>:<topic>` */
  written: string;
  /** the notifier named before the first `:`; undefined: the default MQTT notifier */
  notifier?: string;
  /** the MQTT topic filter */
  topic: string;
}

/** What a notifier id may look like (ids are file names in runtime/<product>_notify.d/). */
const NOTIFIER_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * Read `<topic>` or `<notifier_id>:<topic>`. The part before the first `:`
 * names a notifier only when it looks like a notifier id (no `/`, `+`, `#`),
 * so a topic such as `a/b:c` stays a topic. Throws invalid_params (11 / 400).
 */
export function parseTopic(written: string): ParsedTopic {
  const colon = written.indexOf(':');
  let notifier: string | undefined;
  let topic = written;
  if (colon >= 0) {
    const head = written.slice(0, colon);
    if (head === '') throw invalidParams(`topic ${JSON.stringify(written)}: the notifier id before ':' is empty`);
    if (NOTIFIER_ID.test(head)) {
      notifier = head;
      topic = written.slice(colon + 1);
    }
  }
  const problem = topicFilterProblem(topic);
  if (problem) throw invalidParams(`topic ${JSON.stringify(written)}: ${problem}`);
  return { written, notifier, topic };
}

/** A QoS parameter: an integer 0..2, else invalid_params. */
export function parseQos(q: number): 0 | 1 | 2 {
  if (!Number.isInteger(q) || q < 0 || q > 2) throw invalidParams(`parameter q: QoS must be 0, 1 or 2, not ${q}`);
  return q as 0 | 1 | 2;
}
