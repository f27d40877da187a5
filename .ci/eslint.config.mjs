// typescript-eslint, recommended and type-checked rules, over the project's
// TypeScript in core/ and plugins/; `npm run lint`, and a step of .ci/run.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * One front door per plugin: a file of plugins/<P>/ may import from another
 * plugin's folder only that plugin's contract.ts (plugins/notifiers/contract,
 * plugins/items/contract, plugins/notifiers/mqtt/contract, ...). For a file
 * `depth` folders below a folder of plugins, an import climbing exactly
 * `depth` times lands in that folder; one naming a folder other than its own
 * there must end at a contract. The top-level folders of plugins/ are
 * plugins; so are the folders of plugins/notifiers/ (the host and each
 * notifier type), but for cli/, the host's command line.
 */
const folders = (dir) => fs.readdirSync(path.join(root, dir), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const door = (own, depth) => ({
  regex: `^(\\.\\./){${depth}}(?!${escape(own)}/)[^./][^/]*/(?!(.+/)?contract$)`,
  message: 'another plugin is reached only through its contract.ts (plugins/README.md, "One front door per plugin")',
});
const block = (files, patterns) => ({ files: [files], rules: { 'no-restricted-imports': ['error', { patterns }] } });
const depths = [1, 2, 3, 4];
export const frontDoors = [
  ...folders('plugins').flatMap((own) => depths.map((depth) => block(`plugins/${own}/${'*/'.repeat(depth - 1)}*.ts`, [door(own, depth)]))),
  // a later block replaces the rule's options for its files: these keep the plugins/ door too
  ...folders('plugins/notifiers').filter((own) => own !== 'cli').flatMap((own) => depths.map((depth) => block(
    `plugins/notifiers/${own}/${'*/'.repeat(depth - 1)}*.ts`, [door('notifiers', depth + 1), door(own, depth)],
  ))),
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { project: path.join(root, 'tsconfig.json'), tsconfigRootDir: root } },
    rules: {
      // a name starting with _ is left unused on purpose (a destructured field dropped, a parameter an interface fixes)
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' }],
      // String(v) of a value read from ini, JSON or a script is the intended rendering: objects are
      // handled (JSON) before it wherever they can occur, so '[object Object]' is not a risk there
      '@typescript-eslint/no-base-to-string': 'off',
      // an async function without await is how a function that promises its result turns a throw
      // (a refused call, a missing item) into a rejection its callers already handle
      '@typescript-eslint/require-await': 'off',
    },
  },
  ...frontDoors,
);
