// typescript-eslint, recommended and type-checked rules, over the project's
// TypeScript in core/ and plugins/; `npm run lint`, and a step of .ci/run.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

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
);
