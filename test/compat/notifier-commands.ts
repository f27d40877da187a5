/**
 * The notifier command lines the suite runs with 3.3.2's uc-notifier
 * (record-notifiers.ts, into fixtures/eva332-notifiers/) and with ours
 * (notifier-cli-332.test.ts), in order, on an empty controller folder.
 */
export const NOTIFIER_COMMANDS: readonly string[][] = [
  ['create', '-y', '-s', 'plant1', 'hj', 'json:http://127.0.0.1:28813/hook'],
  ['create', '-y', '-s', 'plant1', 'hp', 'http-post:http://127.0.0.1:28813/post'],
  ['create', '-y', 'hg', 'http:http://127.0.0.1:28813/get'],
  ['create', '-y', '-s', 'plant1', 'eva_1', 'mqtt:mq:mqpass@127.0.0.1:28814'],
  ['create', '-y', 'db_1', 'db:history1.db:3600'],
  ...['hj', 'eva_1'].flatMap((n) => [
    ['subscribe', 'state', n, '-v', '#', '-g', '#'],
    ['subscribe', 'action', n, '-v', '#', '-g', '#', '-a', '#'],
    ['subscribe', 'log', n, '-l', '30'],
    ['subscribe', 'server', n],
  ]),
  ['subscribe', 'state', 'db_1', '-v', '#', '-g', '#'],
  ['set', 'hj', 'notify_key', 'nk1'],
  ['set', 'hj', 'username', 'hookuser'],
  ['set', 'hj', 'password', 'hookpass'],
  ['set', 'eva_1', 'qos.state', '2'],
  ['set', 'eva_1', 'retain_enabled', '0'],
];

/** A notifier file in a comparable form: subscriptions in subject order (3.3.2 writes them in no fixed order). */
export function comparable(file: Record<string, unknown>): Record<string, unknown> {
  const events = Array.isArray(file.events)
    ? [...(file.events as { subject?: string }[])].sort((a, b) => String(a.subject).localeCompare(String(b.subject)))
    : file.events;
  return { ...file, events };
}
