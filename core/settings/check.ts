import fs from 'node:fs';
import { readIni, type IniDocument } from '../ini';
import type { Paths } from '../paths';
import { KernelSettings } from '../defaults';
import { SettingsSchema, type SectionSettings } from './registry';
import type { Finding } from './schema';

/** Who declares settings besides the kernel: plugin definitions (name and `settings`). */
export interface SettingsOwner { name: string; settings?: SectionSettings }

/** The settings schema of a controller: the kernel's sections and those of `owners`. */
export function schemaOf(owners: SettingsOwner[]): SettingsSchema {
  const schema = new SettingsSchema().add('kernel', KernelSettings);
  for (const o of owners) if (o.settings) schema.add(`plugin ${o.name}`, o.settings);
  return schema;
}

/** A file read as ini, or an empty document when it does not exist (every setting then has its default). */
export function readIniFile(file: string): IniDocument {
  return readIni(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '', file);
}

/**
 * The findings of an API key file: its syntax (a malformed line or section
 * header is an error) and each section without `key` (skipped with a
 * warning, as EVA ICS 3.3 did). The fields of a key are the key store's business.
 */
export function checkKeyFile(file: string): Finding[] {
  if (!fs.existsSync(file)) return [];
  const doc = readIniFile(file);
  const findings = [...doc.findings];
  for (const s of doc.sections) {
    if (!s.entries.some((e) => e.key === 'key' && e.value !== '')) {
      findings.push({ level: 'warning', file, line: s.line, message: `key [${s.name}] has no "key" field: skipped` });
    }
  }
  return findings;
}

/** Every finding about a controller's settings files: etc/<product>.ini and the API key file. */
export function checkSettingsFiles(paths: Paths, owners: SettingsOwner[], doc = readIniFile(paths.configFile)): Finding[] {
  const byLine = (a: Finding, b: Finding) => (a.line ?? 0) - (b.line ?? 0);
  return [...schemaOf(owners).check(doc).sort(byLine), ...checkKeyFile(paths.apikeysFile).sort(byLine)];
}
