import ini from 'ini';

/**
 * Parse an ini file the way EVA ICS 3.3 read its own (Python configparser,
 * which has no inline comments): `;` and `#` start a comment only at the
 * start of a line, so `groups = #` means "all groups", not an empty value.
 * The ini package would cut a value at either character, so they (and the
 * backslash, its escape character) are escaped in unquoted values first.
 */
// `any` until every reader takes its section through the settings schema: today each reads its
// own keys and checks their types itself (core/config.ts, the plugins' option readers)
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function parseIni(text: string): Record<string, any> {
  const escaped = text.split(/\r?\n/).map((line) => {
    const at = line.indexOf('=');
    if (at < 0 || /^\s*[;#[]/.test(line)) return line;
    const value = line.slice(at + 1);
    if (/^\s*["']/.test(value)) return line; // quoted: the ini package takes it as written
    return line.slice(0, at + 1) + value.replace(/([\\;#])/g, '\\$1');
  }).join('\n');
  return ini.parse(escaped);
}
