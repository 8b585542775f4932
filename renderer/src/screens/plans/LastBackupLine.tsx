import { useEffect } from 'react';
import { getApi } from '../../api/bridge.ts';
import { useQuery } from '../../api/hooks.ts';
import { overallStatus, statusText } from './plan-status.ts';
import './plans.css';
import { useNow, usePlans } from './use-plans.ts';

/** "Last backup: 2 h ago, OK" (or "failed: why") over every plan and every snapshot in the repository. */
export function LastBackupLine() {
  const plans = usePlans();
  const backups = useQuery('backups.list', {});
  const { reload } = backups;
  const now = useNow();
  useEffect(
    () =>
      getApi().subscribe('job', (j) => {
        if (j.kind === 'backup' && j.state === 'done') reload();
      }),
    [reload],
  );
  if (!plans.data || !backups.data) return null;
  const status = overallStatus(plans.data, backups.data);
  return (
    <p className={`last-backup status-${status.state}`} data-testid="last-backup" role="status">
      {statusText(status, now)}
    </p>
  );
}
