import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import reactHooks from 'eslint-plugin-react-hooks';

/**
 * The engine's layers, lowest first (docs/ARCHITECTURE.md, "Layers"): a folder of shared/node/ may import
 * its own layer's folder and the layers below, never a folder above or a peer of its layer. Type imports
 * count. `.` is shared/node/'s own files (names, processes, settings input); shared/ outside node/ is
 * below them all (browser-safe contracts).
 */
const LAYERS = [
  ['.', 'crypto', 'storage'],
  ['format'],
  ['db'],
  ['pool'],
  ['repository'],
  ['jobs'],
  ['pipeline'],
  ['retention', 'check', 'browse', 'restore'],
  ['backup', 'maintenance'],
  ['plans'],
  ['engine'],
  ['app', 'cli'],
  ['web'],
];
/** Faces talk to the facade: of the engine's folders they import only engine/ (and `.`), and faces below. */
const FACES = ['app', 'cli', 'web'];
/** worker_threads code runs the pipeline: it imports nothing above it. */
const WORKERS_MAY_IMPORT_UP_TO = 'pipeline';

const layerOf = (folder) => LAYERS.findIndex((l) => l.includes(folder));
const nodeFolders = LAYERS.flat().filter((f) => f !== '.');
/** Product code only: a test may set its world up through the facade. */
const restrict = (files, forbidden, why) => ({
  files,
  ignores: ['**/*.test.ts', '**/*.test.tsx'],
  rules: {
    'no-restricted-imports': [
      'error',
      { patterns: forbidden.map((group) => ({ group: [group], message: why })) },
    ],
  },
});
const forbiddenFor = (folder) =>
  nodeFolders.filter((g) => {
    if (g === folder) return false;
    if (FACES.includes(folder)) return g !== 'engine' && !(FACES.includes(g) && layerOf(g) < layerOf(folder));
    return layerOf(g) >= layerOf(folder);
  });
/** A face reaches nothing below the facade through it either: no `engine.ks`, no `engine.repo`. */
const facadeOnly = {
  files: FACES.map((f) => `shared/node/${f}/**/*.ts`),
  ignores: ['**/*.test.ts'],
  rules: {
    'no-restricted-syntax': [
      'error',
      {
        selector: 'MemberExpression[property.name=/^(ks|repo)$/]',
        message:
          'Faces use the facade (engine.local, engine methods), not the database or repository behind it.',
      },
    ],
  },
};
const boundaries = [
  facadeOnly,
  ...LAYERS.flat()
    .filter((f) => f !== '.')
    .map((f) =>
      restrict(
        [`shared/node/${f}/**/*.ts`],
        forbiddenFor(f).map((g) => `../${g}/*`),
        `shared/node/${f} is below that folder (eslint.config.js, LAYERS).`,
      ),
    ),
  restrict(
    ['shared/node/*.ts'],
    nodeFolders.map((g) => `./${g}/*`),
    'shared/node/ own files are the lowest layer.',
  ),
  restrict(
    ['shared/*.ts', 'shared/api/*.ts', 'shared/format/*.ts'],
    ['./node/*', '../node/*', '**/shared/node/*'],
    'shared/ outside node/ is browser-safe: it imports nothing of the engine.',
  ),
  restrict(
    ['workers/**/*.ts'],
    nodeFolders
      .filter((g) => layerOf(g) > layerOf(WORKERS_MAY_IMPORT_UP_TO))
      .map((g) => `../shared/node/${g}/*`),
    'workers/ run the pipeline: they import nothing above shared/node/pipeline.',
  ),
  restrict(
    ['renderer/**/*.{ts,tsx}'],
    ['**/shared/node/*', '**/electron/*', '**/workers/*'],
    'The renderer talks to the engine through the typed API in shared/api only.',
  ),
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'bench/results/', 'test-results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['renderer/**/*.{ts,tsx}', 'electron/preload.ts'],
    languageOptions: { globals: { ...globals.browser } },
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'warn' },
  },
  ...boundaries,
);
