import type { IniDocument } from '../ini';
import { settingData } from '../schema';
import { Eva33Settings, isEva33Section, isEva33Value } from './eva33';
import { type Clash, type Entry, type Finding, type Settings, mergeSettings, readSection, suggest, unknownSetting } from './schema';

/** Settings by ini section: what the kernel and each plugin declare (PluginDefinition.settings). */
export type SectionSettings = Record<string, Settings>;

/**
 * Every declared setting of one controller, by section, and the one check of
 * a settings file against them. A section someone declares is owned: an
 * unknown key there is an error (with the nearest name), unless EVA ICS 3.3
 * used it (then one info line). An undeclared section is an error too, unless
 * it is a 3.3 one. A setting two owners declare is an error too (the first
 * keeps it): a plugin may add keys to a section, never take one over.
 */
export class SettingsRegistry {
  private readonly parts = new Map<string, { owner: string; settings: Settings }[]>();
  /** where each owner is declared (a plugin's file), for the clash finding */
  private readonly files = new Map<string, string>();

  add(owner: string, decl: SectionSettings, file?: string): this {
    if (file) this.files.set(owner, file);
    for (const [section, settings] of Object.entries(decl)) {
      const list = this.parts.get(section) ?? [];
      list.push({ owner, settings });
      this.parts.set(section, list);
    }
    return this;
  }

  /** Every section with all its settings merged; of a key declared twice the first declaration counts (see clashes). */
  sections(): Map<string, Settings> {
    return new Map([...this.parts].map(([name, parts]) => [name, mergeSettings(name, parts).settings]));
  }

  /** Each setting declared by two owners, as an error naming both (in the second owner's file when known). */
  clashes(fallbackFile: string): Finding[] {
    return [...this.parts].flatMap(([name, parts]) => mergeSettings(name, parts).clashes).map((c: Clash) => ({
      level: 'error' as const, file: this.files.get(c.second) ?? fallbackFile,
      message: `setting [${c.section}] ${c.key} is declared by both ${c.first} and ${c.second}: ${c.second} must name its setting otherwise`,
    }));
  }

  /**
   * Every declared setting as plain data, by section (rpc.discover shows it as
   * `x-settings`): type, default, range or choices, unit, description. Never a
   * configured value: describing needs no key.
   */
  describe(): Record<string, Record<string, Record<string, unknown>>> {
    return Object.fromEntries([...this.sections()].map(([name, settings]) => [name, Object.fromEntries(
      Object.entries(settings).map(([key, st]) => [key, settingData(st)]),
    )]));
  }

  /** Every finding about `doc`: its syntax, each value, each unknown key and section. */
  check(doc: IniDocument): Finding[] {
    const sections = this.sections();
    const findings = [...this.clashes(doc.file), ...doc.findings];
    for (const sec of doc.sections) {
      const where = { file: doc.file, section: sec.name };
      const schema = sections.get(sec.name);
      if (!schema) {
        findings.push(isEva33Section(sec.name)
          ? { level: 'info', file: doc.file, line: sec.line, message: `[${sec.name}] is an EVA ICS 3.3 section this controller does not use: ignored` }
          : unknownSection(sec.name, sec.line, doc.file, [...sections.keys()]));
        continue;
      }
      const foreign = (e: Entry): Finding => (Eva33Settings[sec.name]?.includes(e.key)
        ? { level: 'info', file: doc.file, line: e.line, message: `[${sec.name}] ${e.key} is an EVA ICS 3.3 setting this controller does not use: ignored` }
        : unknownSetting(e, schema, where));
      findings.push(...readSection(schema, eva33Values(sec.name, sec.entries, doc.file, findings), where, foreign).findings);
    }
    return findings;
  }
}

/** Entries with 3.3-only values left out (each told once as info), see isEva33Value. */
export function eva33Values(section: string, entries: Entry[], file: string, findings?: Finding[]): Entry[] {
  return entries.filter((e) => {
    if (!isEva33Value(section, e.key, e.value)) return true;
    findings?.push({ level: 'info', file, line: e.line, message: `[${section}] ${e.key}: an EVA ICS 3.3 value this controller does not use: the default applies` });
    return false;
  });
}

function unknownSection(name: string, line: number, file: string, known: string[]): Finding {
  const near = suggest(name, known);
  return { level: 'error', file, line, message: `unknown section [${name}]${near ? ` (did you mean ${near}?)` : ''}` };
}
