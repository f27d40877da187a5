import fs from 'node:fs';
import { definePlugin } from '../../../core/plugin';
import { bool, bound, int, text } from '../../../core/schema';
import { healthReason } from '../../../core/health';
import { ClusterSection, type SharedCvars } from '../../cluster/contract';
import { functionFailed, invalidParams, notFound } from '../../../core/errors';
import { AtomicFile } from '../../../core/toolkit/atomic-file';
import { describe, type ModuleLogger } from '../../../core/log';
import type { CvarsService } from '../contract';
import type { PluginContext } from '../../../core/plugin';

/** Bounds; `[server] cvars_max` and `[server] cvar_max_size` override them. */
export const CvarSettings = {
  cvars_max: bound(10_000, 'most cvars one controller keeps; one more answers 10 / 500'),
  cvar_max_size: bound(65_536, 'longest cvar value, in characters; a longer one answers 11 / 400'),
  cvar_max_name: bound(256, 'longest cvar name, in characters; a longer one answers 11 / 400 (names are kept and written like values)'),
};

/**
 * Read the cvars file. A file that does not parse (it cannot come from us:
 * every write is atomic) is moved aside, not overwritten, so whoever broke it
 * can still look at it; the controller starts without cvars.
 */
function load(file: string, log: ModuleLogger): Map<string, string> {
  const vars = new Map<string, string>();
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return vars;
    throw err;
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
    if (!data || typeof data !== 'object' || Array.isArray(data)) throw new Error('not a JSON object');
  } catch (err) {
    const aside = `${file}.broken-${Date.now()}`;
    fs.renameSync(file, aside);
    log.error(`${file} is not a JSON object (${(err as Error).message}): moved to ${aside}, starting without cvars`);
    return vars;
  }
  for (const [name, value] of Object.entries(data as Record<string, unknown>)) {
    if (typeof value === 'string') vars.set(name, value);
    else if (typeof value === 'number' || typeof value === 'boolean') vars.set(name, String(value));
    else log.warning(`cvar ${name} in ${file} is not text, skipped`);
  }
  return vars;
}

/** Whether a process environment can hold this entry (execve takes `name=value` C strings). */
function isEnvEntry(name: string, value: string): boolean {
  return name !== '' && !name.includes('=') && !name.includes('\0') && !value.includes('\0');
}

/** Where the cvars are: this controller's file, or the fleet's database (`[cluster] cvars = shared`). */
interface CvarStore {
  get(name: string): string | undefined;
  entries(): Iterable<[string, string]>;
  readonly size: number;
  /** the revs, when the store keeps them (the shared one) */
  rev?(name: string): number | undefined;
  set(name: string, value: string, rev?: number): Promise<void>;
  delete(name: string, rev?: number): Promise<boolean>;
}

const NO_REV = 'rev: only with [cluster] cvars = shared (the cvars of this controller have no revs)';

/**
 * get_cvar, set_cvar and the service `cvars`. The file is written at once
 * (db_update = instant: the call answers only when the change is on disk),
 * by `save` (manual), or at stop (on_exit: the controller runs every saver).
 * With `[cluster] cvars = shared` the cvars are the fleet's instead
 * (plugins/cluster/shared-cvars.ts): read from memory, written to the
 * shared database first, each with a rev for compare-and-set.
 */
export const plugin = definePlugin({
  name: 'sysapi-cvars',
  kind: 'sysapi',
  version: '1.0.0',
  provides: ['cvars'],
  settings: { server: CvarSettings },
  start(ctx) {
    const { cvars_max: max, cvar_max_size: maxSize, cvar_max_name: maxName } = ctx.config.section('server', CvarSettings);
    const sharedMode = ctx.config.section('cluster', ClusterSection).cvars === 'shared';
    const shared = sharedMode && ctx.hasService('cluster') ? ctx.service('cluster').cvars : undefined;
    if (sharedMode && !shared) {
      // never the own file instead: its cvars would silently part from the fleet's
      throw healthReason(new Error('the shared cvars ([cluster] cvars = shared) did not start'), 'the shared cvars did not start: get_cvar and set_cvar are refused');
    }
    const store: CvarStore = shared ? sharedStore(shared, ctx.log) : localStore(ctx, ctx.paths.cvarsFile);
    const service: CvarsService = {
      get: (name) => store.get(name),
      all: () => Object.fromEntries(store.entries()),
      env: () => Object.fromEntries([...store.entries()].filter(([name, value]) => isEnvEntry(name, value))),
      async set(name, value, rev) {
        if (!name || name.length > maxName) throw invalidParams(`cvar name: 1 to ${maxName} characters`);
        if (value.length > maxSize) throw invalidParams(`cvar value longer than ${maxSize} characters`);
        if (store.get(name) === undefined && store.size >= max) throw functionFailed(`too many cvars (${max})`);
        await store.set(name, value, rev);
      },
      delete: (name, rev) => store.delete(name, rev),
    };
    ctx.provide('cvars', service);

    ctx.register({
      name: 'get_cvar',
      changes: false,
      aliases: ['cvar_get'],
      permission: 'master',
      params: {
        i: text('variable name; all variables when omitted'),
        rev: bool('answer {name: {value, rev}} (the rev set_cvar compares; [cluster] cvars = shared)'),
      },
      description: 'Read one user-defined variable, or all of them.',
      returns: 'object of name to value; with rev, of name to {value, rev}',
      handler: (p) => {
        if (p.rev && !store.rev) throw invalidParams(NO_REV);
        const shown = (name: string, v: string) => (p.rev ? { value: v, rev: store.rev!(name) } : v);
        if (p.i === undefined) return Object.fromEntries([...store.entries()].map(([n, v]) => [n, shown(n, v)]));
        const v = store.get(p.i);
        if (v === undefined) throw notFound(`cvar ${p.i}`);
        return { [p.i]: shown(p.i, v) };
      },
    });
    ctx.register({
      name: 'set_cvar',
      returns: 'OK',
      fenced: true,
      aliases: ['cvar_set'],
      permission: 'master',
      params: {
        i: text('variable name').req(),
        v: text('value; the variable is deleted when omitted'),
        rev: int('change only if its rev is still this (get_cvar rev=1; 0: only if it does not exist), else 13 busy; [cluster] cvars = shared', { min: 0 }),
      },
      description: 'Set a user-defined variable, or delete it when v is omitted.',
      handler: async (p: { i: string; v?: string; rev?: number }) => {
        if (p.rev !== undefined && !store.rev) throw invalidParams(NO_REV);
        if (p.v === undefined) {
          if (!(await service.delete(p.i, p.rev))) throw notFound(`cvar ${p.i}`);
        } else {
          await service.set(p.i, p.v, p.rev);
        }
        return true;
      },
    });
  },
});

/** The fleet's cvars; a change made elsewhere is a log record at info, as a local set_cvar's API request line is. */
function sharedStore(shared: SharedCvars, log: ModuleLogger): CvarStore {
  shared.subscribe((c) => log.info(c.value === undefined ? `cvar ${c.name} deleted by another controller` : `cvar ${c.name} set by another controller (rev ${c.rev})`));
  return {
    get: (name) => shared.get(name)?.value,
    *entries() { for (const [n, v] of shared.entries()) yield [n, v.value]; },
    get size() { return shared.size; },
    rev: (name) => shared.get(name)?.rev,
    async set(name, value, rev) { await shared.set(name, value, rev); },
    delete: (name, rev) => shared.delete(name, rev),
  };
}

/** This controller's cvars, in its runtime file. */
function localStore(ctx: PluginContext, cvarsFile: string): CvarStore {
  const instant = ctx.config.server.db_update === 'instant';
  const vars = load(cvarsFile, ctx.log);
  const file = new AtomicFile(cvarsFile, ctx.writes);
  let dirty = false;

  const write = async (undo?: () => void) => {
    dirty = false;
    try {
      await file.write(() => JSON.stringify(Object.fromEntries([...vars].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), null, 4), undo);
    } catch (err) {
      dirty = true;
      throw err;
    }
  };
  /**
   * Set (or delete, value undefined) one cvar. Under instant the change is
   * taken back when its write fails: a call that answers an error leaves
   * no trace (written first, then answered).
   */
  // the newest change of each cvar: an undo never takes back a later change
  const latest = new Map<string, object>();
  const change = async (name: string, value: string | undefined) => {
    const before = vars.get(name);
    const mine = {};
    const previous = latest.get(name);
    latest.set(name, mine);
    if (value === undefined) vars.delete(name);
    else vars.set(name, value);
    dirty = true;
    if (!instant) return;
    const undo = () => {
      if (latest.get(name) !== mine) return;
      if (before === undefined) vars.delete(name);
      else vars.set(name, before);
      if (previous) latest.set(name, previous);
      else latest.delete(name);
    };
    try {
      await write(undo);
    } catch (err) {
      ctx.log.error(`cvar ${name} not changed: ${ctx.paths.cvarsFile} could not be written: ${describe(err)}`);
      throw functionFailed(`cvar ${name} not changed: the cvars file could not be written, see the controller log`);
    } finally {
      if (latest.get(name) === mine) latest.delete(name);
    }
  };
  ctx.onSave(async () => { if (dirty) await write(); });
  ctx.onStop(() => file.flush());
  return {
    get: (name) => vars.get(name),
    entries: () => vars.entries(),
    get size() { return vars.size; },
    async set(name, value, rev) {
      if (rev !== undefined) throw invalidParams(NO_REV);
      await change(name, value);
    },
    async delete(name, rev) {
      if (rev !== undefined) throw invalidParams(NO_REV);
      if (!vars.has(name)) return false;
      await change(name, undefined);
      return true;
    },
  };
}
