import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

/**
 * The links of the project's markdown files, read as GitHub renders them:
 * inline links and images, reference definitions, autolinks and bare URLs,
 * outside code blocks and code spans. Used by links.test.ts.
 */

export interface Link { file: string; line: number; target: string }

/** Every *.md file of the repository: tracked, or new and not ignored. */
export function markdownFiles(root: string): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', '*.md'], { cwd: root, encoding: 'utf8' });
  return [...new Set(out.split('\0').filter(Boolean))].filter((f) => fs.existsSync(path.join(root, f))).sort();
}

/** Every file and folder of the repository (relative, `/`-separated), from the same listing. */
export function repositoryPaths(root: string): Set<string> {
  const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  const paths = new Set<string>(['']);
  for (const f of out.split('\0').filter(Boolean)) {
    if (!fs.existsSync(path.join(root, f))) continue; // deleted, not yet staged
    const parts = f.split('/');
    for (let i = 1; i <= parts.length; i++) paths.add(parts.slice(0, i).join('/'));
  }
  return paths;
}

/** The lines of a markdown text with fenced code blocks blanked (line numbers kept). */
export function withoutFences(text: string): string[] {
  const lines = text.split('\n');
  let fence: string | undefined;
  return lines.map((l) => {
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(l);
    if (fence) {
      if (m && m[1][0] === fence[0] && m[1].length >= fence.length && l.trim() === m[1]) fence = undefined;
      return '';
    }
    if (m) { fence = m[1]; return ''; }
    return l;
  });
}

/** A line with its code spans blanked. */
function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)[\s\S]*?\1/g, (s) => ' '.repeat(s.length));
}

/** The links of one markdown text. */
export function linksOf(file: string, text: string): Link[] {
  const links: Link[] = [];
  withoutFences(text).forEach((raw, i) => {
    const line = withoutCodeSpans(raw);
    const add = (target: string) => links.push({ file, line: i + 1, target });
    // [text](target "title") and ![alt](src); <target> form too
    for (const m of line.matchAll(/!?\[[^\]]*\]\(\s*(<[^>]*>|[^\s)]*)(?:\s+["'(][^)]*)?\)/g)) add(m[1].replace(/^<|>$/g, ''));
    // [label]: target
    const def = /^\s{0,3}\[[^\]]+\]:\s*(\S+)/.exec(line);
    if (def) add(def[1].replace(/^<|>$/g, ''));
    // <scheme:...> autolinks, and bare URLs GitHub links by itself
    for (const m of line.matchAll(/<([a-zA-Z][a-zA-Z0-9+.-]*:[^\s>]+)>/g)) add(m[1]);
    const rest = line.replace(/!?\[[^\]]*\]\([^)]*\)/g, '').replace(/<[a-zA-Z][a-zA-Z0-9+.-]*:[^\s>]+>/g, '');
    for (const m of rest.matchAll(/\b(?:https?:\/\/|www\.)[^\s<>)]+/g)) add(m[0]);
  });
  return links;
}

/** GitHub's anchor for a heading's text: markup dropped, lower case, punctuation but - and _ dropped, spaces to -. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link counts by its text
    // outside code spans: tags and _emphasis_ go (* goes with the punctuation below; a_b is no emphasis)
    .replace(/`[^`]*`|[^`]+/g, (part) => (part.startsWith('`') ? part.slice(1, -1)
      : part.replace(/<[^>]+>/g, '').replace(/(?<!\w)(__|_)(?=\S)([\s\S]*?\S)\1(?!\w)/g, '$2')));
  return text.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

/** The anchors a markdown text offers: its headings (repeats get -1, -2, ...) and explicit ids. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(text)) {
    const h = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = slug(h[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

/** Whether a target names something outside this repository (a scheme, a host, a protocol-relative URL). */
export function isExternal(target: string): boolean {
  return /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(target) || target.startsWith('//') || target.startsWith('www.');
}

/**
 * What is wrong with one link, or undefined: an external one not in `allowed`,
 * a path leaving the repository or naming nothing in it, an anchor no
 * heading of the target file has.
 */
export function problem(root: string, paths: Set<string>, link: Link, allowed: readonly string[]): string | undefined {
  const { target } = link;
  if (isExternal(target)) return allowed.includes(target) ? undefined : `points outside the repository: ${target}`;
  const hash = target.indexOf('#');
  const rawPath = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  let decoded: string;
  try { decoded = decodeURIComponent(rawPath.split('?')[0]); } catch { return `malformed link: ${target}`; }
  const from = path.posix.dirname(link.file);
  const rel = decoded === '' ? link.file
    : decoded.startsWith('/') ? path.posix.normalize(decoded.slice(1)) : path.posix.normalize(path.posix.join(from, decoded));
  const clean = rel.replace(/\/+$/, '').replace(/^\.$/, '');
  if (clean === '..' || clean.startsWith('../')) return `leaves the repository: ${target}`;
  if (!paths.has(clean)) return `names nothing in the repository: ${target}`;
  if (anchor !== undefined && anchor !== '') {
    if (!clean.endsWith('.md')) return `an anchor on a file that is not markdown: ${target}`;
    const anchors = anchorsOf(fs.readFileSync(path.join(root, clean), 'utf8'));
    if (!anchors.has(anchor)) return `no heading ${anchor} in ${clean}: ${target}`;
  }
  return undefined;
}
