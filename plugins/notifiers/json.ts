import { notifierPlugin } from './type-plugin';
import { frameHead, webhookType } from './webhook';

/** json web hook: POST {k, subject, space, data: [events]}, a batch of one subject per request. */
export const jsonType = webhookType({
  name: 'json',
  aliases: ['http-json'],
  description: 'POSTs each batch as JSON {k, subject, space, data: [events]}',
  encode: (cfg, subject, events) => [{
    request: { method: 'POST', contentType: 'application/json', body: JSON.stringify({ ...frameHead(cfg, subject), data: events }) },
    events,
  }],
  encodeTest: (cfg) => ({ method: 'POST', contentType: 'application/json', body: JSON.stringify(frameHead(cfg, 'test')) }),
});

export const plugin = notifierPlugin('notifier-json', jsonType);
