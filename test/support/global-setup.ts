import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { INSTALL_HINT, findVersitygw } from './versitygw.ts';

/**
 * S3 tests never skip silently: without the server the run fails and says how to install it.
 *
 * Every temporary of the run (test folders, keystores, versitygw's data, restores, browser profiles,
 * the CLI's and web mode's own) goes into one folder that is removed at the end: the suite writes about
 * 5 GB per run, and left in /tmp that filled a development machine's disk after ten runs.
 * CAIRN_KEEP_TEST_FILES=1 keeps it for a look after a failure.
 */
export default function setup(): () => void {
  if (!findVersitygw()) throw new Error(INSTALL_HINT);
  const run = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-test-run-'));
  // Read by os.tmpdir() in the test workers and in every process they start.
  process.env.TMPDIR = run;
  return () => {
    if (process.env.CAIRN_KEEP_TEST_FILES === '1') {
      process.stderr.write(`Test files kept in ${run}\n`);
      return;
    }
    fs.rmSync(run, { recursive: true, force: true, maxRetries: 3 });
  };
}
