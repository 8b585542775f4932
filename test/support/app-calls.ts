import { parseRequest, type Method, type Request } from '../../shared/api/contract.ts';
import type { JobView } from '../../shared/api/views.ts';
import type { AppService } from '../../shared/node/app/service.ts';

/** Calls `app` as a bridge does: the contract's schema first, then the service. */
export async function callAs<M extends Method>(app: AppService, method: M, body: unknown) {
  return app.call(method, parseRequest(method, body) as Request<M>);
}

/** Resolves with the job once it is no longer running (checked on every job event). */
export function jobFinished(app: AppService, jobId: string): Promise<JobView> {
  return new Promise((resolve) => {
    const check = (j: JobView) => {
      if (j.id !== jobId || j.state === 'running') return;
      app.jobs.events.off('job', check);
      resolve(j);
    };
    app.jobs.events.on('job', check);
  });
}
