import type { Entry, Finding } from './settings/schema';

export interface IniSection { name: string; line: number; entries: Entry[] }
export interface IniDocument { file: string; sections: IniSection[]; findings: Finding[] }

const HEADER = /^\[([^\][]+)\]$/;

/**
 * Read an ini file the way EVA ICS 3.3 read its own (Python configparser):
 * `;` and `#` start a comment only at the start of a line (no inline
 * comments, so `groups = #` means "all groups"), `key = value` or
 * `key: value`, option names are case-insensitive (kept lower case), section
 * names are not. A value that is one quoted string loses its quotes. Every line that is
 * not one of those, a section header that does not close, a setting before
 * any section, a section or a setting given twice is an error finding with
 * its line: nothing is skipped silently.
 */
export function readIni(text: string, file: string): IniDocument {
  const sections: IniSection[] = [];
  const findings: Finding[] = [];
  const error = (line: number, message: string) => findings.push({ level: 'error', file, line, message });
  let current: IniSection | undefined;
  /** a bad header was met: its settings are not read, and that header's error says so once */
  let lost = false;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    const line = lines[i].trim();
    if (line === '' || line.startsWith(';') || line.startsWith('#')) continue;
    if (line.startsWith('[')) {
      const m = HEADER.exec(line);
      if (!m) {
        error(n, `malformed section header ${JSON.stringify(line)} (expected [name])`);
        current = undefined; // its settings would land in the wrong section: they are not read
        lost = true;
        continue;
      }
      const name = m[1].trim();
      const seen = sections.find((s) => s.name === name);
      if (seen) {
        error(n, `section [${name}] given twice (first at line ${seen.line})`);
        current = undefined;
        lost = true;
        continue;
      }
      current = { name, line: n, entries: [] };
      lost = false;
      sections.push(current);
      continue;
    }
    const at = [line.indexOf('='), line.indexOf(':')].filter((x) => x > 0).sort((a, b) => a - b)[0];
    if (at === undefined) {
      error(n, `malformed line ${JSON.stringify(line)} (expected name = value)`);
      continue;
    }
    const key = line.slice(0, at).trim().toLowerCase();
    let value = line.slice(at + 1).trim();
    // one quoted string loses its quotes; `"a" -e "b"` is two quoted words (a command line) and stays as written
    const q = value[0];
    if (value.length >= 2 && (q === '"' || q === "'") && value.indexOf(q, 1) === value.length - 1) value = value.slice(1, -1);
    if (!current) {
      if (!lost) error(n, `setting ${key} outside any section`);
      continue;
    }
    const dup = current.entries.find((e) => e.key === key);
    if (dup) {
      error(n, `[${current.name}] ${key} given twice (first at line ${dup.line})`);
      continue;
    }
    current.entries.push({ key, value, line: n });
  }
  return { file, sections, findings };
}

/** The sections of a document as plain objects (name → key → value). */
export function sectionsOf(doc: IniDocument): Record<string, Record<string, string>> {
  return Object.fromEntries(doc.sections.map((s) => [s.name, Object.fromEntries(s.entries.map((e) => [e.key, e.value]))]));
}

/** Lenient reading for callers that only want the values (lines in error are left out). */
export function parseIni(text: string): Record<string, Record<string, string>> {
  return sectionsOf(readIni(text, ''));
}
