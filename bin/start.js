#!/usr/bin/env node
// `npm start`: the desktop app. Until the app lands (issue 3), say so and point at the CLI.
process.stderr.write(
  'The Cairn desktop app is not built yet; the engine is ready from the command line:\n' +
    '  npm run -s cairn -- --help\n',
);
process.exitCode = 0;
