import os from 'node:os';
import type { ForgetResult } from '../../api/retention.ts';
import { keepPolicyIsEmpty, type KeepPolicyDraft } from '../../retention.ts';
import type { ForgetOptions } from '../retention/forget-job.ts';

export type Forget = (opts: ForgetOptions) => Promise<ForgetResult>;

/**
 * Applies a plan's keep policy to the plan's own backups: this machine's snapshots of exactly the plan's
 * sources (a snapshot of more sources, such as another plan's, is left alone even though forget's
 * --path filter would match it). Returns the snapshot ids removed.
 */
export async function applyPlanRetention(
  forget: Forget,
  policy: KeepPolicyDraft | undefined,
  sources: readonly string[],
  host: string = os.hostname(),
): Promise<string[]> {
  if (keepPolicyIsEmpty(policy)) return [];
  const key = JSON.stringify([...sources].sort());
  const plan = await forget({ policy, hosts: [host], paths: [...sources], dryRun: true });
  const ids = plan.groups
    .filter((g) => g.host === host && JSON.stringify([...g.sources].sort()) === key)
    .flatMap((g) => g.remove.map((r) => r.id));
  if (ids.length === 0) return [];
  return (await forget({ ids })).removed;
}
