import path from 'node:path';
import { pathToFileURL } from 'node:url';
import test from 'ava';
import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/**
 * The lint rule that keeps plugins apart (.ci/eslint.config.mjs, frontDoors:
 * no-restricted-imports), applied as `npm run lint` applies it to a file of
 * that path. `npm run lint` itself shows the tree keeps it.
 */
async function importErrors(file: string, code: string): Promise<string[]> {
  const config = await import(pathToFileURL(path.join(ROOT, '.ci', 'eslint.config.mjs')).href) as { frontDoors: Linter.Config[] };
  const linter = new Linter({ configType: 'flat', cwd: ROOT });
  const messages = linter.verify(code, [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser as Linter.Parser } }, ...config.frontDoors], path.join(ROOT, file));
  return messages.map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`);
}

test('a plugin importing another plugin\'s insides fails the lint, type imports too', async (t) => {
  for (const [file, code] of [
    ['plugins/stream/client.ts', "import { subscribed } from '../notifiers/host/filter';"],
    ['plugins/stream/client.ts', "import type { Oid } from '../items/oid';"],
    ['plugins/corescripts/topic.ts', "import { topicFilterProblem } from '../notifiers/mqtt/topics';"],
    ['plugins/history/series.ts', "import type { HistoryBackend } from '../notifiers/db/backend';"],
    ['plugins/notifiers/mqtt/receive.ts', "import { parseBinding } from '../../items/binding';"],
    ['plugins/sysapi/dump/index.ts', "export { x } from '../../notifiers/host/host';"],
    // the host and each notifier type are plugins of their own inside plugins/notifiers/
    ['plugins/notifiers/mqtt/index.ts', "import { withoutSecrets } from '../host/config';"],
    ['plugins/notifiers/influxdb/history.ts', "import type { HistoryBackend } from '../db/backend';"],
    ['plugins/notifiers/mqtt/deeper/x.ts', "import { x } from '../../../items/binding';"],
  ]) {
    const errors = await importErrors(file, code);
    t.is(errors.length, 1, `${file}: ${code}`);
    t.regex(errors[0], /^no-restricted-imports: .*contract\.ts/);
  }
});

test('contracts, the kernel and a plugin\'s own files pass', async (t) => {
  for (const [file, code] of [
    ['plugins/stream/client.ts', "import { subscribed } from '../notifiers/contract';"],
    ['plugins/stream/client.ts', "import type { Oid } from '../items/contract';"],
    ['plugins/stream/client.ts', "import { throttleKey } from '../../core/auth/throttle';\nimport { x } from './metrics';"],
    ['plugins/corescripts/topic.ts', "import { topicFilterProblem } from '../notifiers/mqtt/contract';"],
    ['plugins/notifiers/mqtt/receive.ts', "import { parseBinding } from '../../items/contract';\nimport { Topics } from './topics';"],
    ['plugins/notifiers/mqtt/receive.ts', "import { describe } from '../../../core/log';"],
    ['plugins/sysapi/cvars/index.ts', "import type { CvarsService } from '../contract';\nimport { keyProps } from '../keyprops';"],
    ['plugins/notifiers/mqtt/index.ts', "import { withoutSecrets } from '../contract';\nimport { notifierPlugin } from '../type-plugin';"],
    ['plugins/notifiers/mqtt/deeper/x.ts', "import { x } from '../../contract';\nimport { y } from '../endpoint';"],
    // the notifier command line is the host's
    ['plugins/notifiers/cli/notifier.ts', "import { parseProps } from '../host/settings';"],
  ]) {
    t.deepEqual(await importErrors(file, code), [], `${file}: ${code}`);
  }
});
