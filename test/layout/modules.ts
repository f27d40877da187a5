import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * The modules of the source tree as the compiler reads them: whom each
 * imports (every relative reference: import, import type, export ... from,
 * import(), require(), a `declare module` augmentation) and which names each
 * exports, told apart into names it defines and names it passes on from
 * another module. Used by imports.test.ts and exports.test.ts.
 */

/** The repository, found from the compiled test wherever the build went (the folder holding core/ and plugins/). */
export function repositoryRoot(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'core', 'main.ts')) && fs.existsSync(path.join(dir, 'plugins'))) return dir;
  }
  throw new Error('repository root not found');
}

export interface Module {
  /** relative to the root, `/`-separated, with .ts */
  file: string;
  /** the modules of the tree it references (same form as `file`) */
  imports: string[];
  /** names it exports that it defines itself */
  defines: string[];
  /** names it exports that another module defines (`export { x } from`, `export *`, an imported binding exported again) */
  passes: string[];
}

/** Every .ts file under `dirs` of `root` (no .d.ts), sorted. */
export function sourceFiles(root: string, dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel === '.' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(r);
      else if (e.isFile() && r.endsWith('.ts') && !r.endsWith('.d.ts')) out.push(r);
    }
  };
  for (const d of dirs) if (fs.existsSync(path.join(root, d))) walk(d);
  return out.sort();
}

/** The file a relative specifier of `from` names (x.ts, or x/index.ts), or undefined for a package or a file outside .ts. */
function resolve(root: string, from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec)).replace(/\.js$/, '');
  for (const f of [`${base}.ts`, `${base}/index.ts`]) if (fs.existsSync(path.join(root, f))) return f;
  return undefined;
}

/** Every name a declaration binds (`x`, `{ a, b: [c] }`). */
function bound(name: ts.BindingName, into: Set<string>): void {
  if (ts.isIdentifier(name)) into.add(name.text);
  else for (const el of name.elements) if (!ts.isOmittedExpression(el)) bound(el.name, into);
}

const has = (node: ts.Node, kind: ts.SyntaxKind) => ts.canHaveModifiers(node) && !!ts.getModifiers(node)?.some((m) => m.kind === kind);

/** Read one module: `text` is its source, `file` its path relative to `root`. */
export function readModule(root: string, file: string, text: string): Module {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const imports = new Set<string>();
  const defines = new Set<string>();
  const passes = new Set<string>();
  const imported = new Set<string>();
  const refer = (spec: ts.Node | undefined) => {
    if (!spec || !ts.isStringLiteralLike(spec)) return;
    const f = resolve(root, file, spec.text);
    if (f) imports.add(f);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.arguments.length === 1
      && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      refer(node.arguments[0]);
    }
    ts.forEachChild(node, visit);
  };
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st)) {
      refer(st.moduleSpecifier);
      const c = st.importClause;
      if (c?.name) imported.add(c.name.text);
      if (c?.namedBindings) {
        if (ts.isNamespaceImport(c.namedBindings)) imported.add(c.namedBindings.name.text);
        else for (const el of c.namedBindings.elements) imported.add(el.name.text);
      }
    } else if (ts.isImportEqualsDeclaration(st)) {
      if (ts.isExternalModuleReference(st.moduleReference)) refer(st.moduleReference.expression);
      imported.add(st.name.text);
    } else if (ts.isModuleDeclaration(st) && ts.isStringLiteral(st.name)) {
      refer(st.name); // `declare module './x'`: an augmentation depends on the module it augments
    }
  }
  for (const st of sf.statements) {
    if (ts.isExportDeclaration(st)) {
      refer(st.moduleSpecifier);
      const c = st.exportClause;
      if (!c) { passes.add('*'); continue; }
      if (ts.isNamespaceExport(c)) { (st.moduleSpecifier ? passes : defines).add(c.name.text); continue; }
      for (const el of c.elements) {
        const local = (el.propertyName ?? el.name).text;
        (st.moduleSpecifier || imported.has(local) ? passes : defines).add(el.name.text);
      }
    } else if (ts.isExportAssignment(st)) {
      // `export default` / `export =`: no name of its own
    } else if (has(st, ts.SyntaxKind.ExportKeyword) && !has(st, ts.SyntaxKind.DefaultKeyword)) {
      if (ts.isVariableStatement(st)) {
        for (const d of st.declarationList.declarations) bound(d.name, defines);
      } else if ((ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st) || ts.isInterfaceDeclaration(st)
        || ts.isTypeAliasDeclaration(st) || ts.isEnumDeclaration(st) || ts.isModuleDeclaration(st)) && st.name && ts.isIdentifier(st.name)) {
        defines.add(st.name.text);
      }
    }
    visit(st);
  }
  imports.delete(file);
  return { file, imports: [...imports].sort(), defines: [...defines].sort(), passes: [...passes].sort() };
}

/** Every module under `dirs` of `root`. */
export function readModules(root: string, dirs: string[]): Module[] {
  return sourceFiles(root, dirs).map((f) => readModule(root, f, fs.readFileSync(path.join(root, f), 'utf8')));
}

/**
 * The import circles of `modules`: each a list of modules that reach one
 * another, as one path that closes (a -> b -> ... -> a), shortest first.
 */
export function circles(modules: Module[]): string[][] {
  const graph = new Map(modules.map((m) => [m.file, m.imports.filter((f) => f !== m.file)]));
  // strongly connected components (Tarjan), then one closing path through each
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const connect = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do { w = stack.pop()!; onStack.delete(w); group.push(w); } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  return groups.map((group) => {
    // the shortest way from the group's first module back to itself, inside the group
    const inGroup = new Set(group);
    const start = group[0];
    const from = new Map<string, string>();
    const queue = [start];
    for (let i = 0; i < queue.length; i++) {
      for (const w of graph.get(queue[i])!) {
        if (!inGroup.has(w)) continue;
        if (w === start) {
          const pathBack = [start];
          for (let at: string | undefined = queue[i]; at && at !== start; at = from.get(at)) pathBack.unshift(at);
          return [start, ...pathBack];
        }
        if (!from.has(w)) { from.set(w, queue[i]); queue.push(w); }
      }
    }
    return group;
  }).sort((a, b) => a.length - b.length || a[0].localeCompare(b[0]));
}

/** Exported names defined by more than one module: name -> the modules, sorted by name. */
export function sameNames(modules: Module[]): [string, string[]][] {
  const by = new Map<string, string[]>();
  for (const m of modules) for (const n of m.defines) by.set(n, [...(by.get(n) ?? []), m.file]);
  return [...by].filter(([, files]) => files.length > 1).sort(([a], [b]) => a.localeCompare(b));
}
