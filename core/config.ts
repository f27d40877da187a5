import { injectable } from 'tsyringe';
import os from 'node:os';
import path from 'node:path';
import { sectionsOf, type IniDocument } from './ini';
import { Defaults, DefaultPorts, KernelSettings } from './defaults';
import { Paths } from './paths';
import { ConfigError, readSection, type Finding, type Settings, type Values } from './settings/schema';
import { eva33Values } from './settings/registry';
import { checkSettingsFiles, readIniFile, registryOf, type SettingsOwner } from './settings/check';
import type { SettingsRegistry } from './settings/registry';
import { parseListenAddress } from './settings/listen-address';

export { parseBool } from './schema';

export type { SettingsOwner };

/**
 * The controller configuration: etc/<product>.ini read by the declared
 * settings (core/settings). The kernel's own sections are read when this is
 * made; the whole file (and the key file), plugin sections and unknown
 * sections included, is checked by `checkAll` once the plugins are loaded:
 * the controller calls it before anything starts.
 */
@injectable()
export class Config {
  readonly server: Values<typeof KernelSettings.server>;
  readonly webapi: Values<typeof KernelSettings.webapi>;
  readonly sysapi: Values<typeof KernelSettings.sysapi>;
  readonly doc: IniDocument;
  /**
   * Every section as written (name → key → value): whether a key is written at
   * all. Values are read by their declaration (`section`), never from here.
   */
  readonly raw: Record<string, Record<string, string>>;
  /** info and warning findings of the last check, for the log once it exists */
  notes: Finding[] = [];
  /** every declared setting of this controller, known once checkAll has run (the plugins are loaded then) */
  schema: SettingsRegistry = registryOf([]);

  constructor(readonly paths: Paths) {
    this.doc = readIniFile(paths.configFile);
    this.raw = sectionsOf(this.doc);
    // the kernel's sections alone, read now: the logger and the HTTP server need them before plugins load.
    // A bad value takes the default here; checkAll, before anything starts, refuses it.
    const kernel = Object.fromEntries(Object.entries(KernelSettings).map(([name, s]) => [name, this.read(name, s, [])])) as
      { [K in keyof typeof KernelSettings]: Values<(typeof KernelSettings)[K]> };
    this.server = kernel.server;
    if (!this.server.name) this.server.name = os.hostname().split('.')[0];
    // EVA ICS 3.3 wrote `log_file = log/uc.log`: relative to the controller directory, not to where it was started
    if (this.server.log_file) this.server.log_file = path.resolve(paths.dir, this.server.log_file);
    this.webapi = kernel.webapi;
    if (!this.webapi.listen) this.webapi.listen = `127.0.0.1:${DefaultPorts[paths.product]}`;
    this.sysapi = kernel.sysapi;
  }

  /** Check the whole file against the kernel's and these plugins' settings; throws ConfigError on any error. */
  checkAll(owners: SettingsOwner[]): void {
    // the key store warns of its own skipped keys: only key file errors are taken from there
    this.schema = registryOf(owners);
    const findings = checkSettingsFiles(this.paths, owners, this.doc)
      .filter((f) => f.file !== this.paths.apikeysFile || f.level === 'error');
    this.notes = findings.filter((f) => f.level !== 'error');
    if (findings.some((f) => f.level === 'error')) throw new ConfigError(findings);
  }

  /**
   * One section's values by a declaration (a plugin's part of a section). Keys
   * others declare are not this reader's business: checkAll judges those.
   */
  section<S extends Settings>(name: string, settings: S): Values<S> {
    const errors: Finding[] = [];
    const values = this.read(name, settings, errors);
    if (errors.length) throw new ConfigError(errors);
    return values;
  }

  private read<S extends Settings>(name: string, settings: S, errors: Finding[]): Values<S> {
    const entries = this.doc.sections.find((s) => s.name === name)?.entries ?? [];
    const r = readSection(settings, eva33Values(name, entries, this.doc.file), { file: this.doc.file, section: name }, () => undefined);
    errors.push(...r.findings);
    return r.values;
  }

  /** db_update as the number `test` reports: manual 0, instant 1, on_exit 2 */
  get dbUpdateCode(): number {
    return { manual: 0, instant: 1, on_exit: 2 }[this.server.db_update];
  }
}

/** The kernel defaults, for code that needs them without a controller. */
export { Defaults };

/** Split "host:port", "[v6]:port" or ":port" into parts; throws for anything else (the settings check refuses it first). */
export function parseListen(listen: string): { host: string; port: number } {
  const r = parseListenAddress(listen);
  if (typeof r === 'string') throw new Error(`bad listen address: ${r}`);
  return r;
}
