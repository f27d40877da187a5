import type http from 'node:http';
import type { PluginContext } from '../../../core/plugin';
import { METRICS_CONTENT_TYPE } from '../../../core/metrics';
import type { ModuleLogger } from '../../../core/log';
import type { Endpoint, EndpointEnv, NotifierConfig, NotifierType } from '../contract';
import { notifierPlugin } from '../type-plugin';
import { LoginThrottle, webapiLimits } from '../../../core/auth/throttle';
import { BasicCredentials } from './auth';
import { writePage, type PageFigures } from './page';
import { int, text, bound, defaults } from '../../../core/schema';

export const PrometheusLimits = {
  max_items: bound(100_000, 'most items on one metrics page (3.3 had no bound); up to ~180 bytes an item of a long name, so 100 000 make ~18 MB, written in ~1-2 s while other requests go on', 'bytes'),
};

export const PrometheusDefaults = defaults(PrometheusLimits);

/** Where a notifier's page is: /ns/<id>/metrics on the API port, as in 3.3. */
const PAGE = /^\/ns\/([^/]+)\/metrics\/?$/;

/**
 * A prometheus notifier: delivers nothing. Prometheus scrapes its page,
 * which shows the state of the items its state subscription covers at the
 * time of the scrape (the events the host hands it are not needed and
 * dropped: the items themselves are read).
 */
export class PrometheusEndpoint implements Endpoint {
  private readonly credentials?: BasicCredentials;
  private readonly maxItems: number;
  private scrapes = 0;
  private refused = 0;
  private last: PageFigures = { items: 0, leftOut: 0, clashes: 0 };
  private told = { leftOut: false, clashes: false };

  /** `throttle`: the controller's, for every prometheus page of it */
  constructor(
    private readonly cfg: NotifierConfig, private readonly ctx: PluginContext, private readonly log: ModuleLogger,
    private readonly throttle: LoginThrottle,
  ) {
    const { username, password } = cfg;
    // as 3.3: credentials are asked for when both are set (non-empty)
    if (typeof username === 'string' && username && typeof password === 'string' && password) {
      this.credentials = new BasicCredentials(username, password);
    } else if (username || password) {
      log.warning(`prometheus notifier ${cfg.id}: only one of username and password is set, so the metrics page asks for none`);
    }
    this.maxItems = typeof cfg.max_items === 'number' ? cfg.max_items : PrometheusDefaults.max_items;
  }

  /** Answer a request for this notifier's page. */
  async serve(req: http.IncomingMessage, res: http.ServerResponse, ip: string): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    if (this.credentials && !(await this.admitted(req.headers.authorization, ip))) {
      if (!res.destroyed) {
        res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end('invalid username/password\n');
      }
      return;
    }
    this.scrapes++;
    res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Cache-Control': 'no-cache, no-store, must-revalidate' });
    if (req.method === 'HEAD') { res.end(); return; }
    const items = this.ctx.hasService('items') ? this.ctx.service('items') : undefined;
    this.last = await writePage(res, items, this.cfg.events, this.maxItems);
    if (this.last.leftOut && !this.told.leftOut) {
      this.told.leftOut = true;
      this.log.warning(`prometheus notifier ${this.cfg.id}: ${this.last.leftOut} items past max_items ${this.maxItems} left out of the metrics page`);
    }
    if (this.last.clashes && !this.told.clashes) {
      this.told.clashes = true;
      this.log.warning(`prometheus notifier ${this.cfg.id}: ${this.last.clashes} items left out of the metrics page, their metric name being another item's`);
    }
  }

  /**
   * Whether the credentials are right, as the API checks keys: an address
   * with too many wrong guesses booked ahead is refused unchecked, a wrong
   * guess counts against its address and its answer is held back (the
   * tarpit); no credentials at all count nothing.
   */
  private async admitted(header: string | undefined, ip: string): Promise<boolean> {
    const { throttle } = this;
    const checked = !!header && throttle.locked(ip) === 0;
    if (checked && this.credentials!.accepts(header)) return true;
    this.refused++; // counted now, whatever the answer waits for
    if (checked) await throttle.hold(throttle.failed(ip, header));
    return false;
  }

  async send(): Promise<void> {
    // the page reads the items at each scrape
  }

  async test(): Promise<void> {
    // nothing to reach: Prometheus comes to the page (3.3's test always passed)
  }

  stop(): void {}

  info(): Record<string, unknown> {
    return { scrapes: this.scrapes, refused: this.refused, page_items: this.last.items, left_out: this.last.leftOut, name_clashes: this.last.clashes };
  }
}

/** The prometheus notifier type: the subscribed items' status and value as gauges at /ns/<id>/metrics. */
export const prometheusType: NotifierType = {
  name: 'prometheus',
  description: 'serves the subscribed items\' status and value to Prometheus at /ns/<id>/metrics on the API port',
  settings: {
    username: text('with password: the basic auth user name a scrape must give'),
    password: text('with username: the basic auth password a scrape must give', { secret: true }),
    max_items: int('most items on the metrics page; the rest are left out and counted', { default: PrometheusDefaults.max_items, min: 1 }),
  },
  parseProps(props) {
    // 3.3: `create ID prometheus:`; credentials are set after (`set ID username ...`), not in the command line
    if (props.trim()) throw new Error('prometheus takes nothing after the colon: set username and password with `set`');
    return {};
  },
  target: (cfg) => `/ns/${cfg.id}/metrics`,
  forController(ctx) {
    // wrong credentials per client address, one throttle per controller for all its prometheus pages, with the
    // API's limits ([webapi] login_*): 3.3 had none, and a password here is as guessable as a key
    const throttle = new LoginThrottle(webapiLimits(ctx.config.webapi));
    return { create: (cfg: NotifierConfig, env: EndpointEnv) => new PrometheusEndpoint(cfg, env.ctx, env.log, throttle) };
  },
};

/** The page of a request's path, if it is one of an enabled prometheus notifier. */
function pageOf(ctx: PluginContext, url: string): PrometheusEndpoint | undefined {
  const m = PAGE.exec(url.split('?')[0]);
  if (!m || !ctx.hasService('notifiers')) return undefined;
  let id: string;
  try { id = decodeURIComponent(m[1]); } catch { return undefined; }
  const n = ctx.service('notifiers').get(id);
  return n?.enabled && n.endpoint instanceof PrometheusEndpoint ? n.endpoint : undefined;
}

export const plugin = notifierPlugin('notifier-prometheus', prometheusType, {
  start(ctx) {
    // one route for every prometheus notifier: a disabled or unknown one is the kernel's 404
    ctx.httpRoute('/ns', async (req, res, ip) => {
      const page = pageOf(ctx, req.url ?? '/');
      if (!page) return false;
      await page.serve(req, res, ip);
      return true;
    });
  },
});
