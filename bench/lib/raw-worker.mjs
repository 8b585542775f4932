// A raw-baseline thread (benchmarks only): loads the TypeScript loader, then runs its share on request.
import { parentPort } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { runRawJob } = await import('./raw-ops.ts');
parentPort.on('message', async (job) => parentPort.postMessage({ bytes: await runRawJob(job) }));
parentPort.postMessage({ ready: true });
