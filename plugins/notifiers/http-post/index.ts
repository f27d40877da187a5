import { notifierPlugin } from '../type-plugin';
import { frameHead, webhookType, type HookRequest } from '../webhook';

const FORM = 'application/x-www-form-urlencoded';

function form(fields: Record<string, string>): HookRequest {
  return { method: 'POST', contentType: FORM, body: new URLSearchParams(fields).toString() };
}

/** http-post web hook (deprecated type): the json frame form-encoded, `data` as JSON text. */
export const httpPostType = webhookType({
  name: 'http-post',
  description: 'POSTs each batch form-encoded (k, subject, space, data as JSON text); deprecated',
  encode: (cfg, subject, events) => [{ request: form({ ...frameHead(cfg, subject), data: JSON.stringify(events) }), events }],
  encodeTest: (cfg) => form(frameHead(cfg, 'test')),
});

export const plugin = notifierPlugin('notifier-http-post', httpPostType);
