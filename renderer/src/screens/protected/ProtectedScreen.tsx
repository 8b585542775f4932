import { useMemo } from 'react';
import { snapshotRedundancyText } from '../../../../shared/pool-text.ts';
import { describeKeep } from '../../../../shared/retention.ts';
import { describeSchedule } from '../../../../shared/schedule.ts';
import { useQuery } from '../../api/hooks.ts';
import { counted, formatDate, formatSize } from '../../api/format.ts';
import { protectedOverview, type ProtectedSet } from './overview.ts';
import './protected.css';

/**
 * What is protected, at a glance: per set of sources (a plan's, or a one-off backup's), the newest
 * backup, its files and size, the versions kept, its redundancy and verification, and the next run;
 * sets that need a look come first.
 */
export function ProtectedScreen({ host, onBrowse }: { host: string; onBrowse: (backupId: string) => void }) {
  const backups = useQuery('backups.list', {});
  const plans = useQuery('plans.list', {});
  const redundancy = useQuery('backups.redundancy', {});
  const verifications = useQuery('backups.verifications', {});
  const error = backups.error ?? plans.error;
  const overview = useMemo(
    () =>
      // Redundancy first: a pool's backups would otherwise show "one copy" until it arrives.
      backups.data && plans.data && (redundancy.data || redundancy.error)
        ? protectedOverview({
            backups: backups.data,
            plans: plans.data,
            redundancy: redundancy.data ?? {},
            verifications: verifications.data ?? [],
            host,
            now: Date.now(),
          })
        : null,
    [backups.data, plans.data, redundancy.data, redundancy.error, verifications.data, host],
  );

  return (
    <div className="screen protected">
      <header className="screen-head">
        <h1>Protected</h1>
      </header>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {!overview && !error && <p className="muted">Reading the backups…</p>}
      {overview && overview.sets.length === 0 && (
        <p className="muted">
          Nothing is backed up yet: Back up adds files and folders, Plans runs them on a schedule.
        </p>
      )}
      {overview && overview.sets.length > 0 && (
        <>
          <p className="protected-total" data-testid="protected-total">
            <strong>{formatSize(overview.total.bytes)}</strong> in {counted(overview.total.files, 'file')},
            across {counted(overview.sets.length, 'set')} of sources;{' '}
            {counted(overview.total.versions, 'version')} kept.
          </p>
          <ul className="protected-sets">
            {overview.sets.map((s) => (
              <SetCard key={s.key} set={s} thisHost={host} onBrowse={onBrowse} />
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

function SetCard({
  set: s,
  thisHost,
  onBrowse,
}: {
  set: ProtectedSet;
  thisHost: string;
  onBrowse: (backupId: string) => void;
}) {
  const r = s.redundancy ? snapshotRedundancyText(s.redundancy) : null;
  return (
    <li className={`card protected-set${s.attention ? ' needs-attention' : ''}`} data-testid="protected-set">
      <div className="protected-head">
        <h2 title={s.sources.join('\n')}>{s.sources.join(', ')}</h2>
        <span className="muted">
          {s.plan ? `Plan “${s.plan.name}”` : 'One-off backups'}
          {s.host !== thisHost && ` · from ${s.host}`}
        </span>
      </div>
      {s.attention && (
        <p className="warning" role="status">
          {s.attention}
        </p>
      )}
      <dl className="protected-facts">
        <dt>Last backup</dt>
        <dd data-testid="last-backup">
          {s.latest
            ? `${formatDate(s.latest.createdAt)} · ${counted(s.latest.fileCount, 'file')}, ${formatSize(s.latest.totalBytes)} · ${s.redundancy ? 'in the pool' : `on ${s.latest.target}`}`
            : 'none yet'}
        </dd>
        <dt>Versions kept</dt>
        <dd data-testid="versions-kept">
          {s.versions === 0
            ? '—'
            : `${s.versions}${s.oldest !== null && s.versions > 1 ? `, back to ${formatDate(s.oldest)}` : ''}`}
          {s.plan?.keeps && (
            <span className="muted"> · {describeKeep(s.plan.keeps.policy).replace(/^K/, 'k')}</span>
          )}
        </dd>
        <dt>Redundancy</dt>
        <dd title={r?.detail}>{r ? r.short : s.latest ? `One copy, on ${s.latest.target}` : '—'}</dd>
        <dt>Verified</dt>
        <dd>
          {s.verified
            ? `${s.verified.state === 'ok' ? 'whole' : s.verified.state === 'running' ? 'verifying now' : 'problems found'} · ${formatDate(s.verified.startedAt)}`
            : s.latest
              ? 'not yet (History → Verify)'
              : '—'}
        </dd>
        <dt>Next run</dt>
        <dd data-testid="next-run">
          {!s.plan
            ? 'no plan: only when backed up by hand'
            : s.plan.running
              ? 'running now'
              : s.plan.nextDueAt === null
                ? 'manual: when you start it (Plans → Run now)'
                : `${formatDate(Math.max(s.plan.nextDueAt, Date.now()))} · ${describeSchedule(s.plan.schedule).toLowerCase()}`}
        </dd>
      </dl>
      {s.latest && (
        <div className="actions start">
          <button type="button" onClick={() => onBrowse(s.latest!.id)}>
            Browse the newest backup
          </button>
        </div>
      )}
    </li>
  );
}
