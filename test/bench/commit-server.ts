import 'reflect-metadata';
import fs from 'node:fs';
import { Controller } from '../../core/controller';
import { WriteHold } from '../../core/toolkit/group-commit';
import { makeDir } from '../helpers/controller';

/**
 * A controller for test/bench/commit.ts: db_update = instant, in a fresh
 * folder, group commit on or off (argument `off`). Prints `PORT <n>`;
 * SIGTERM stops it and removes the folder.
 */
async function main(): Promise<void> {
  const dir = makeDir(undefined, { ini: { server: { db_update: 'instant' } } });
  const ctl = await Controller.start({ dir, product: 'uc' });
  // the controller's stores made their group commits with its write holds at the start: switched for all of them
  ctl.get(WriteHold).setGroupCommit(process.argv[2] !== 'off');
  process.stdout.write(`PORT ${ctl.port}\n`);
  process.once('SIGTERM', () => {
    void ctl.stop().finally(() => {
      fs.rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  });
}

void main();
