// Worker bootstrap: registers the TypeScript loader in this thread, then runs the chunk worker.
import { register } from 'tsx/esm/api';

register();
await import('./chunk-worker.ts');
