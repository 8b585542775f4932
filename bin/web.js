#!/usr/bin/env node
// `npm run web`: the Cairn UI in web mode (engine behind a local server, UI in your browser).
(await import('./secret-env.js')).setSecretEnvAside();
const { register } = await import('tsx/esm/api');
register();
await import('../shared/node/web/main.ts');
