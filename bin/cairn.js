#!/usr/bin/env node
// Cairn CLI launcher: runs the bundled CLI (rebuilt when sources change), or the TypeScript sources
// through tsx when no bundle can be built.
(await import('./secret-env.js')).setSecretEnvAside();
const { cliBundle } = await import('./cli-bundle.js');
const bundle = await cliBundle();
if (bundle) {
  await import(bundle);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../shared/node/cli/main.ts');
}
