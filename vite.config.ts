import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The renderer is built once into dist/renderer and served by the web-mode server or loaded by Electron
// from disk (hence relative asset paths).
export default defineConfig({
  root: 'renderer',
  base: './',
  plugins: [react()],
  build: { outDir: '../dist/renderer', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1024 },
});
