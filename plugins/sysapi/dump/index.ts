import fsp from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { definePlugin, type PluginContext } from '../../../core/plugin';
import { bound, defaults } from '../../../core/schema';
import { functionFailed } from '../../../core/errors';
import { Levels } from '../../../core/log';
import { PackageVersion } from '../../../core/version';
import { writeFileAtomic } from '../../../core/toolkit/atomic-file';
import type { NotifierHost } from '../../notifiers/contract';

const gzip = promisify(zlib.gzip);

/** Bounds of `dump`. */
export const DumpLimits = {
  max_size: bound(4 * 1024 * 1024, 'the largest dump, bytes of JSON before compression; log records are left out first to fit', 'bytes'),
  log_records: bound(1000, 'the newest log records a dump holds (EVA ICS 3.3 kept a like number)'),
  keep: bound(10, 'dumps kept in runtime/dump/: the oldest beyond this are removed when a new one is written'),
};

export const DumpDefaults = defaults(DumpLimits);

/** What a dump shows instead of a secret. */
export const Hidden = '<hidden>';
/** Names of settings and fields that may hold a secret: their text values are never dumped. */
const SECRET_NAME = /pass|secret|token|key|cred|auth|private|cert|salt|hash/i;
/** A password in a URI (scheme://user:password@host) */
const URI_PASSWORD = /(\/\/[^/\s:@]*:)[^@\s/]*@/g;
/** runtime/dump/<YYYYmmddHHMMSS>.dump.gz: EVA ICS 3.3's name, local time */
const DUMP_NAME = /^\d{14}\.dump\.gz$/;

/** A copy of `v` with the text of secret-looking names hidden and URI passwords cut out, at any depth. */
function scrub(v: unknown, name = ''): unknown {
  if (typeof v === 'string') return SECRET_NAME.test(name) && v !== '' ? Hidden : v.replace(URI_PASSWORD, `$1${Hidden}@`);
  if (Array.isArray(v)) return v.map((x) => scrub(x, name));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, scrub(x, k)]));
  return v;
}

/** Every secret value the controller holds (API keys, notifier secrets): none may appear in a dump, wherever it came from. */
function secretValues(ctx: PluginContext, host: NotifierHost | undefined): string[] {
  const out = ctx.keys.all().map((k) => k.key);
  if (host) {
    const types = host.settings().types;
    for (const id of host.list()) {
      const cfg = host.get(id)?.config;
      if (!cfg) continue;
      const declared = (types[cfg.type]?.settings ?? {}) as Record<string, { secret?: boolean }>;
      for (const [field, value] of Object.entries(cfg)) {
        if (typeof value !== 'string') continue;
        if (declared[field]?.secret || SECRET_NAME.test(field)) out.push(value);
        for (const m of value.matchAll(/\/\/[^/\s:@]*:([^@\s/]+)@/g)) out.push(m[1]);
      }
    }
  }
  // a value this short would hide ordinary words; keys and passwords that short are refused elsewhere or worthless anyway
  return [...new Set(out)].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
}

/** `text` with every one of `secrets` (and its JSON-escaped form) replaced by Hidden. */
function hideAll(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) {
    for (const form of new Set([s, JSON.stringify(s).slice(1, -1)])) out = out.split(form).join(Hidden);
  }
  return out;
}

/** How many times each name occurs. */
function countOf(names: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of names) out[n] = (out[n] ?? 0) + 1;
  return out;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
const stamp = (d: Date) =>
  `${pad(d.getFullYear(), 4)}${pad(d.getMonth() + 1)}${pad(d.getDate())}${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}`;

/**
 * `dump` (master): a diagnostics file, gzip-compressed JSON, in
 * runtime/dump/, mode 0600, written atomically: versions, settings (the
 * kernel's in effect, the rest as written; secrets hidden), plugins, notifiers with their delivery queues,
 * memory, the newest log records. Its absolute path is answered
 * ({file}), as EVA ICS 3.3 answered it. No API key, password, token or
 * notifier credential is in it: secret-looking names are hidden, and then
 * every key and notifier secret the controller knows is cut out of the
 * whole text, wherever it appears (a log line included).
 */
export const plugin = definePlugin({
  name: 'sysapi-dump',
  kind: 'sysapi',
  version: '1.0.0',
  start(ctx) {
    const folder = path.join(ctx.paths.runtime, 'dump');

    /** Every section as written, the kernel's with every value in effect (defaults included), as 3.3 dumped its config. */
    const settings = () => {
      const { raw, server, webapi, sysapi } = ctx.config;
      return { ...raw, server: { ...raw.server, ...server }, webapi: { ...raw.webapi, ...webapi }, sysapi: { ...raw.sysapi, ...sysapi } };
    };

    const collect = (host: NotifierHost | undefined) => {
      const d = new Date();
      return {
        reason: { event: 'request', info: '' },
        time: d.getTime() / 1000,
        uptime: Math.round(process.uptime()),
        product: ctx.paths.product,
        system_name: ctx.config.server.name,
        versions: { controller: PackageVersion, ...process.versions },
        platform: { os: process.platform, arch: process.arch, pid: process.pid },
        memory: process.memoryUsage(),
        resources: process.resourceUsage(),
        // what keeps the event loop busy: open sockets, timers, file handles, by kind
        active: countOf(process.getActiveResourcesInfo()),
        log_memory: ctx.logger.memSize(),
        settings: scrub(settings()),
        plugins: ctx.plugins(),
        notifiers: host ? host.list().map((id) => scrub(host.describe(id, true))) : [],
        log: ctx.logger.records(Levels.debug, undefined, DumpDefaults.log_records),
      };
    };

    /** The dump as JSON within max_size: fewer log records (halving) until it fits. */
    const encode = (host: NotifierHost | undefined): string => {
      const d = collect(host);
      const secrets = secretValues(ctx, host);
      for (;;) {
        const text = hideAll(JSON.stringify(d), secrets);
        if (Buffer.byteLength(text) <= DumpDefaults.max_size) return text;
        if (!d.log.length) throw functionFailed(`the dump would be larger than ${DumpDefaults.max_size} bytes even without log records`);
        d.log = d.log.slice(Math.ceil(d.log.length / 2));
      }
    };

    /** Remove the oldest dumps beyond `keep`. */
    const prune = async () => {
      const names = (await fsp.readdir(folder)).filter((n) => DUMP_NAME.test(n)).sort();
      for (const n of names.slice(0, Math.max(0, names.length - DumpDefaults.keep))) {
        await fsp.rm(path.join(folder, n), { force: true });
      }
    };

    ctx.register({
      name: 'dump',
      aliases: ['core_dump'],
      permission: 'master',
      params: {},
      description: 'Write a diagnostics file (gzip-compressed JSON, no secrets) in runtime/dump/.',
      returns: 'object with file (absolute path of the dump)',
      async handler() {
        const host = ctx.hasService('notifiers') ? ctx.service('notifiers') : undefined;
        const data = await gzip(encode(host));
        const file = path.join(folder, `${stamp(new Date())}.dump.gz`);
        await writeFileAtomic(file, data, 0o600);
        await prune();
        ctx.log.warning(`dump created, file: ${file}`);
        return { file };
      },
    });
  },
});
