import fsp from 'node:fs/promises';
import path from 'node:path';
import { ApiError, functionFailed, notFound } from '../../core/errors';
import type { ModuleLogger } from '../../core/log';
import { within } from '../../core/toolkit/time-limit';
import { CoreScript, ScriptError, type RpcDecl } from './script';

/** Script files: *.js, not hidden (editors' and atomic writers' temp files start with a dot). */
export const SCRIPT_FILE = /^[^.].*\.js$/;

/** An event for the scripts: `type` picks the handlers (on(type, ...)). */
export interface ScriptEvent { type: string; [field: string]: unknown }

/** Who called a cs_ method, as the script sees it. */
export interface Caller { key_id: string | null; master: boolean; user: string | null; ip: string }

export interface Method { script: CoreScript; decl: RpcDecl }

export interface ScriptSetEnv {
  /** the folder of the scripts */
  dir: string;
  /** the controller folder: scripts are named relative to it in stacks and logs */
  base: string;
  timeoutMs: number;
  /** how long async handlers are waited for, ms */
  waitMs: number;
  maxFileSize: number;
  log: ModuleLogger;
  globals(script: CoreScript): Record<string, unknown>;
  /** the scripts, or their cs_ methods, changed */
  changed(methods: Map<string, Method>): void;
}

/**
 * The loaded core scripts, in alphabetical order of their files. Loads are
 * serialized (the watcher and reload_corescripts never interleave); events
 * run every script's handlers of the event's type in that order.
 */
export class ScriptSet {
  private readonly scripts = new Map<string, CoreScript>();
  private ordered: CoreScript[] = [];
  private methods = new Map<string, Method>();
  private serial: Promise<unknown> = Promise.resolve();

  constructor(private readonly env: ScriptSetEnv) {}

  /** Does any script handle events of this type? (no need to queue them otherwise) */
  handles(type: string): boolean {
    return this.ordered.some((s) => s.handlers.has(type));
  }

  /** Drop every script and load the folder afresh. */
  reloadAll(): Promise<void> {
    return this.serialize(async () => {
      this.dropAll();
      for (const name of await this.names()) await this.loadOne(name, true);
      this.commit();
    });
  }

  /**
   * Bring the scripts in line with the folder as it is now (files added,
   * changed or removed since it was read); an unchanged file is left running.
   */
  refresh(): Promise<void> {
    return this.serialize(async () => {
      const before = new Map(this.scripts);
      for (const name of new Set([...before.keys(), ...await this.names()])) await this.loadOne(name, false);
      if (before.size !== this.scripts.size || [...before].some(([n, s]) => this.scripts.get(n) !== s)) this.commit();
    });
  }

  /** The script files of the folder, sorted. */
  private async names(): Promise<string[]> {
    try {
      return (await fsp.readdir(this.env.dir)).filter((n) => SCRIPT_FILE.test(n)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      return [];
    }
  }

  /** Load, reload or drop one file, as it is on disk now (an unchanged file is left running). */
  reloadFile(name: string): Promise<void> {
    if (!SCRIPT_FILE.test(name) || name !== path.basename(name)) return Promise.resolve();
    return this.serialize(async () => {
      await this.loadOne(name, false);
      this.commit();
    });
  }

  /** Drop every script (stop). */
  unloadAll(): Promise<void> {
    return this.serialize(async () => {
      this.dropAll();
      this.commit();
    });
  }

  /** Run the handlers of an event in every script, waiting for async ones at most waitMs. */
  async run(event: ScriptEvent): Promise<void> {
    const waits: Promise<unknown>[] = [];
    for (const s of this.ordered) {
      for (const h of s.handlers.get(event.type) ?? []) {
        if (!s.alive) break;
        try {
          const r = s.call(`${event.type} handler`, h, [event]);
          if (r instanceof Promise) waits.push(r.catch((err) => this.failed(err)));
        } catch (err) {
          this.failed(err);
        }
      }
    }
    if (waits.length && !(await within(Promise.all(waits), this.env.waitMs))) {
      this.env.log.warning(`${event.type} handlers still running after ${this.env.waitMs} ms; going on with the next event`);
    }
  }

  /** A cs_<topic> call: the answer of the script that declares it (OK when it returns nothing). */
  async call(topic: string, params: Record<string, unknown>, caller: Caller): Promise<unknown> {
    const m = this.methods.get(topic);
    const name = `cs_${topic}`;
    if (!m || !m.script.alive) throw notFound(`core script method ${name}`);
    try {
      let r = m.script.call(name, m.decl, [params, caller]);
      if (r instanceof Promise) {
        let resolved: unknown;
        if (!(await within(r.then((v) => { resolved = v; }), this.env.waitMs))) {
          throw functionFailed(`${name} did not answer within ${this.env.waitMs} ms`);
        }
        r = resolved;
      }
      const answer = m.script.copyOut(r, `${name} result`);
      return answer === undefined ? true : answer;
    } catch (err) {
      if (err instanceof ApiError) throw err;
      this.failed(err);
      throw functionFailed(err instanceof ScriptError ? err.message : `${name} failed, see the controller log`);
    }
  }

  private failed(err: unknown): void {
    this.env.log.error(err instanceof Error ? err.message : String(err));
  }

  private serialize(fn: () => Promise<void>): Promise<void> {
    const next = this.serial.then(fn, fn);
    this.serial = next.catch(() => {});
    return next;
  }

  private dropAll(): void {
    for (const s of this.scripts.values()) s.unload();
    this.scripts.clear();
  }

  private async read(file: string): Promise<string | undefined> {
    try {
      const st = await fsp.stat(file);
      if (!st.isFile()) return undefined;
      if (st.size > this.env.maxFileSize) throw new Error(`larger than ${this.env.maxFileSize} bytes`);
      return await fsp.readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  private async loadOne(name: string, force: boolean): Promise<void> {
    const file = path.join(this.env.dir, name);
    const shown = path.relative(this.env.base, file);
    const old = this.scripts.get(name);
    let source: string | undefined;
    try {
      source = await this.read(file);
    } catch (err) {
      source = undefined;
      this.env.log.error(`${shown}: cannot be read: ${(err as Error).message}`);
    }
    if (!force && old && source === old.source) return;
    if (old) {
      old.unload();
      this.scripts.delete(name);
      if (source === undefined) this.env.log.info(`core script ${shown} unloaded`);
    }
    if (source === undefined) return;
    const script = new CoreScript(name, shown, source, this.env.timeoutMs, (msg) => this.env.log.error(msg));
    try {
      script.load(this.env.globals(script));
    } catch (err) {
      this.env.log.error(`core script not loaded: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    this.scripts.set(name, script);
    this.env.log.info(`core script ${shown} ${old ? 'reloaded' : 'loaded'}`);
  }

  private commit(): void {
    this.ordered = [...this.scripts.keys()].sort().map((n) => this.scripts.get(n)!);
    const methods = new Map<string, Method>();
    for (const script of this.ordered) {
      for (const [topic, decl] of script.rpcs) {
        const taken = methods.get(topic);
        if (taken) {
          this.env.log.error(`${script.file}:${decl.line ?? '?'}: cs_${topic} is already declared by ${taken.script.file}; ignored`);
          continue;
        }
        methods.set(topic, { script, decl });
      }
    }
    this.methods = methods;
    this.env.changed(methods);
  }
}

