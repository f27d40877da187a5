import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import type { IniDocument } from '../ini';
import type { Paths } from '../paths';
import type { Entry, Finding } from './schema';
import { parseListenAddress } from './listen-address';

/** The entry of `key` in `section` as written (the last, should a section be written twice), or undefined. */
export function entryOf(doc: IniDocument, section: string, key: string): Entry | undefined {
  let found: Entry | undefined;
  for (const s of doc.sections) if (s.name === section) for (const e of s.entries) if (e.key === key) found = e;
  return found;
}

/** Where a setting is written, for a message: ` (etc/uc.ini:12)`, or ` (the default)` when it is not. */
export function whereSet(doc: IniDocument, section: string, key: string): string {
  const e = entryOf(doc, section, key);
  return e ? ` (${doc.file}:${e.line})` : ' (the default)';
}

/**
 * What the type of a setting cannot tell: kernel values that parse but can
 * never work — a listen address that is no address, certificate files that
 * cannot be read or do not go together (the items plugin checks
 * mqtt_update_default). Each is an error at its file:line, found before anything
 * starts: the start stops with exit 3, which the supervisor and the unit do
 * not restart. (What only the start can find, a port another process holds,
 * stays a failure of that start, restarted.)
 */
export function checkUsable(paths: Paths, doc: IniDocument): Finding[] {
  const findings: Finding[] = [];
  const error = (e: Entry | undefined, message: string) => findings.push({ level: 'error', file: doc.file, line: e?.line, message });
  const value = (section: string, key: string) => {
    const e = entryOf(doc, section, key);
    return e && e.value.trim() !== '' ? { e, v: e.value.trim() } : undefined;
  };

  let listening = true;
  for (const key of ['listen', 'ssl_listen']) {
    const w = value('webapi', key);
    if (!w) continue;
    const r = parseListenAddress(w.v);
    if (typeof r === 'string') {
      error(w.e, `[webapi] ${key}: ${r}`);
      listening = false;
    }
  }

  // the files matter to the HTTPS listener only: without it they are never read
  const sslListen = value('webapi', 'ssl_listen');
  const pem: Record<string, Buffer> = {};
  for (const key of sslListen ? ['ssl_cert', 'ssl_key'] : []) {
    const w = value('webapi', key);
    if (!w) {
      error(sslListen!.e, `[webapi] ssl_listen needs ${key} (a file in ${paths.etc})`);
      continue;
    }
    const file = path.resolve(paths.etc, w.v);
    try {
      pem[key] = fs.readFileSync(file);
    } catch (err) {
      error(w.e, `[webapi] ${key}: ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  }
  // whether the two go together matters once both listeners can be made
  if (sslListen && listening && pem.ssl_cert && pem.ssl_key) {
    try {
      tls.createSecureContext({ cert: pem.ssl_cert, key: pem.ssl_key });
    } catch (err) {
      error(entryOf(doc, 'webapi', 'ssl_cert'), `[webapi] ssl_cert and ssl_key do not make a TLS server: ${(err as Error).message}`);
    }
  }

  return findings;
}
