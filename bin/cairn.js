#!/usr/bin/env node
// Cairn CLI launcher: registers the TypeScript loader, then runs the headless engine's CLI.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { register } = await import('tsx/esm/api');
register();
await import('../shared/node/cli/main.ts');
