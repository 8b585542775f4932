import { useEffect, useRef, useState } from 'react';
import type { JobView } from '../../../shared/api/views.ts';
import { isLive } from '../../../shared/job-state.ts';
import { getApi } from '../api/bridge.ts';
import { useJobs } from '../api/hooks.ts';
import { messageOf } from '../api/format.ts';

/** A job someone should look at: it failed, or a verify found damage. */
const needsAttention = (j: JobView) =>
  !j.seen && (j.state === 'failed' || (j.state === 'problems' && j.kind === 'verify'));

const what = (j: JobView) => (j.state === 'failed' ? 'failed' : 'found problems');

/**
 * "Needs attention": failed jobs (a plan run at night, too) stay named at the top of every screen until
 * marked seen, across reloads and restarts (the server keeps the flag with the card). A job that fails
 * while the page is open also raises a browser notification when the browser allows them; the desktop
 * app's main process raises its own for plan runs (electron/main.ts), window or not.
 */
export function AttentionBanner({ desktop }: { desktop: boolean }) {
  const jobs = useJobs();
  const [error, setError] = useState<string | null>(null);
  const [permission, setPermission] = useState(() =>
    typeof Notification === 'undefined' ? 'denied' : Notification.permission,
  );
  // A notification is for a job that fails while the page is open (seen running, or started since it
  // opened), not for the old failures listed when it opens.
  const last = useRef(new Map<string, JobView['state']>());
  const opened = useRef(Date.now());
  useEffect(() => {
    for (const j of jobs) {
      const before = last.current.get(j.id);
      last.current.set(j.id, j.state);
      const fresh = before ? isLive(before) : j.startedAt >= opened.current;
      if (desktop || !fresh || before === j.state || !needsAttention(j)) continue;
      if (typeof Notification !== 'undefined' && Notification.permission === 'granted')
        new Notification(`Cairn: ${j.title} ${what(j)}`, { body: j.error ?? '' });
    }
  }, [jobs, desktop]);

  const shown = jobs.filter(needsAttention);
  if (shown.length === 0) return null;
  const seen = (id: string) =>
    getApi()
      .invoke('jobs.seen', { jobId: id })
      .then(
        () => setError(null),
        (e) => setError(messageOf(e)),
      );
  return (
    <section className="attention" aria-label="Needs attention" data-testid="attention">
      <strong>Needs attention</strong>
      <ul>
        {shown.slice(0, 3).map((j) => (
          <li key={j.id}>
            <span>
              {j.title} {what(j)}
              {j.error ? `: ${j.error}` : '.'}
            </span>
            <button type="button" className="small" onClick={() => void seen(j.id)}>
              Seen
            </button>
          </li>
        ))}
        {shown.length > 3 && <li className="muted">and {shown.length - 3} more on their cards</li>}
      </ul>
      {!desktop && permission === 'default' && (
        <button
          type="button"
          className="link"
          onClick={() => void Notification.requestPermission().then(setPermission)}
        >
          Alert me in this browser when a backup fails
        </button>
      )}
      {error && <p className="error">{error}</p>}
    </section>
  );
}
