import '../test-clock.ts';
import '../small-heap.ts';
import { AppService, toApiError } from '../app/service.ts';
import { fastClock, systemClock } from '../app/scheduler.ts';
import { ensureRendererBuilt } from './renderer-build.ts';
import { startWebServer } from './server.ts';
import { setSecretEnvAside, takeSecretEnv } from '../secret-env.ts';

setSecretEnvAside();

/** Web mode: the engine behind a loopback-only, token-protected server; the UI runs in any browser. */
const log = (line: string) => process.stderr.write(line + '\n');
const rendererDir = await ensureRendererBuilt(log);
// Tests make plan schedules pass quickly; honoured only under the test runner.
const clockRate = Number(process.env.CAIRN_TEST_CLOCK_RATE);
const clock = process.env.VITEST && clockRate > 0 ? fastClock(clockRate) : systemClock;
const service = new AppService('web', undefined, clock);
await unlockFromEnvironment();
const port = process.env.CAIRN_PORT ? Number(process.env.CAIRN_PORT) : undefined;
const server = await startWebServer(service, { rendererDir, port });
process.stdout.write(
  `Cairn is running in web mode. Open this address in your browser:\n  ${server.launchUrl}\n`,
);
if (process.env.CAIRN_READY_FD === '3') {
  // Tests read the address from a pipe instead of scraping the terminal.
  const { createWriteStream } = await import('node:fs');
  createWriteStream('', { fd: 3 }).end(JSON.stringify({ url: server.url, token: server.token }) + '\n');
}

/**
 * A server started with CAIRN_PASSPHRASE (as the CLI takes it) unlocks at once, so due plans run for as
 * long as it runs, with no browser open. The variable is taken out of the environment (secret-env.ts), so
 * no child process inherits it and /proc/<pid>/environ no longer shows it.
 */
async function unlockFromEnvironment(): Promise<void> {
  const passphrase = takeSecretEnv('CAIRN_PASSPHRASE');
  if (!passphrase || (await service.call('app.status', {})).state !== 'locked') return;
  try {
    await service.call('app.unlock', { passphrase });
    log('Unlocked with CAIRN_PASSPHRASE: backup plans run while this server runs.');
  } catch (err) {
    log(
      `CAIRN_PASSPHRASE did not unlock the keystore (${toApiError(err).message}); unlock it in the browser.`,
    );
  }
}

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await service.close(); // running jobs stop first (resumable), then the keystore closes
  await server.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
