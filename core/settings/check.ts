import fs from 'node:fs';
import { readIni, type IniDocument } from '../ini';
import type { Paths } from '../paths';
import { KernelSettings } from '../defaults';
import { SettingsRegistry, type SectionSettings } from './registry';
import { formatFinding, type ConfigError, type Finding } from './schema';
import { checkUsable } from './usability';
import { parseExpires } from '../auth/apikey';

/**
 * Who declares settings besides the kernel: plugin definitions (name,
 * `settings`, `checkFiles`), with the file each was loaded from when known.
 */
export interface SettingsOwner {
  name: string;
  settings?: SectionSettings;
  file?: string;
  /** PluginDefinition.checkFiles: the findings about the plugin's own settings files */
  checkFiles?(paths: Paths, plugins: readonly SettingsOwner[]): Finding[];
}

/** The settings schema of a controller: the kernel's sections and those of `owners`. */
export function registryOf(owners: SettingsOwner[]): SettingsRegistry {
  const schema = new SettingsRegistry().add('the kernel', KernelSettings);
  for (const o of owners) if (o.settings) schema.add(`plugin ${o.name}`, o.settings, o.file);
  return schema;
}

/** A file read as ini, or an empty document when it does not exist (every setting then has its default). */
export function readIniFile(file: string): IniDocument {
  return readIni(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '', file);
}

/**
 * The findings of an API key file: its syntax (a malformed line or section
 * header is an error) and each section without `key` (skipped with a
 * warning, as EVA ICS 3.3 did), and an `expires` that is no time (an
 * error: a key meant to run out must never silently live for ever). The
 * other fields of a key are the key store's business.
 */
export function checkKeyFile(file: string): Finding[] {
  if (!fs.existsSync(file)) return [];
  const doc = readIniFile(file);
  const findings = [...doc.findings];
  for (const s of doc.sections) {
    if (!s.entries.some((e) => e.key === 'key' && e.value !== '')) {
      findings.push({ level: 'warning', file, line: s.line, message: `key [${s.name}] has no "key" field: skipped` });
    }
    for (const e of s.entries) {
      if (e.key !== 'expires') continue;
      try {
        parseExpires(e.value);
      } catch (err) {
        findings.push({ level: 'error', file, line: e.line, message: `key [${s.name}] ${(err as Error).message}` });
      }
    }
  }
  return findings;
}

const byLine = (a: Finding, b: Finding) => (a.line ?? 0) - (b.line ?? 0);

/** The findings about etc/<product>.ini and the API key file (what the notifier command line checks too). */
export function checkIniFiles(paths: Paths, owners: SettingsOwner[], doc = readIniFile(paths.configFile)): Finding[] {
  return [...registryOf(owners).check(doc).sort(byLine), ...checkKeyFile(paths.apikeysFile).sort(byLine)];
}

/**
 * Every finding about a controller's settings files: etc/<product>.ini (with
 * the kernel values that parse but cannot work, ./usability.ts), the
 * API key file and the files plugins own (notifier files), each plugin
 * judging its own (`checkFiles`). A plugin whose check throws is an error
 * naming it, never a crash.
 */
export function checkSettingsFiles(paths: Paths, owners: SettingsOwner[], doc = readIniFile(paths.configFile)): Finding[] {
  const findings = checkIniFiles(paths, owners, doc);
  findings.push(...checkUsable(paths, doc));
  for (const o of owners) {
    if (!o.checkFiles) continue;
    try {
      findings.push(...o.checkFiles(paths, owners));
    } catch (err) {
      findings.push({ level: 'error', file: o.file ?? paths.configFile, message: `plugin ${o.name} could not check its files: ${err instanceof Error ? err.message : String(err)}` });
    }
  }
  return findings;
}

/** What a program stopped by settings errors prints: every finding, then why `what` did not happen. */
export function configErrorText(err: ConfigError, what: string): string {
  return `${err.findings.map((f) => `${formatFinding(f)}\n`).join('')}${what}: the settings above are in error\n`;
}
