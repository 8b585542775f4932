import { useState } from 'react';
import type { PoolView } from '../../../../shared/api/views.ts';
import { describePolicy, policyChangeText } from '../../../../shared/pool-text.ts';
import { getApi } from '../../api/bridge.ts';
import { messageOf } from '../../format.ts';

const sentence = (s: string) => s.charAt(0).toUpperCase() + s.slice(1) + '.';

/**
 * The redundancy policy in plain words, and a change to it: copies and write quorum are chosen, what
 * the change costs and survives is said, and only "Apply" sends it.
 */
export function PolicyForm({ pool, onSaved }: { pool: PoolView; onSaved: (p: PoolView) => void }) {
  const current = pool.policy.scheme === 'replicas' ? pool.policy : null;
  const [copies, setCopies] = useState(current?.copies ?? 1);
  const [quorum, setQuorum] = useState(current?.writeQuorum ?? 1);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const changed = current !== null && (copies !== current.copies || quorum !== current.writeQuorum);
  const most = Math.min(3, Math.max(1, pool.activeTargets));

  const apply = async () => {
    setError(null);
    setSaving(true);
    try {
      onSaved(await getApi().invoke('pool.setPolicy', { replicas: copies, writeQuorum: quorum }));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setSaving(false);
    }
  };
  const reset = () => {
    setCopies(current?.copies ?? 1);
    setQuorum(current?.writeQuorum ?? 1);
    setError(null);
  };

  return (
    <div className="card form policy" data-testid="policy">
      <p className="policy-text" data-testid="policy-text">
        {sentence(describePolicy(pool.policy))}
      </p>
      {!pool.pooled ? (
        <p className="muted small">
          With one target there is one copy of each pack. Add a second bucket or folder (Settings) to keep
          copies on both.
        </p>
      ) : current === null ? (
        <p className="muted small">This version of Cairn cannot change an erasure-coded policy.</p>
      ) : (
        <>
          <div className="row wrap">
            <label className="inline">
              Keep
              <select
                aria-label="Copies"
                value={copies}
                onChange={(e) => {
                  const n = Number(e.target.value);
                  setCopies(n);
                  setQuorum((q) => Math.min(q, n));
                }}
              >
                {Array.from({ length: most }, (_, i) => i + 1).map((n) => (
                  <option key={n} value={n}>
                    {n === 1 ? '1 copy' : `${n} copies`}
                  </option>
                ))}
              </select>
              of each pack; a backup waits for
              <select
                aria-label="Write quorum"
                value={quorum}
                onChange={(e) => setQuorum(Number(e.target.value))}
              >
                {Array.from({ length: copies }, (_, i) => i + 1).map((n) => (
                  <option key={n} value={n}>
                    {n === 1 ? '1 copy' : `${n} copies`}
                  </option>
                ))}
              </select>
            </label>
          </div>
          {changed && (
            <div
              className="policy-change"
              data-testid="policy-change"
              role="region"
              aria-label="What changes"
            >
              <strong>If you apply this:</strong>
              <ul>
                {policyChangeText(
                  pool.policy,
                  { copies, writeQuorum: quorum },
                  { activeTargets: pool.activeTargets, storedBytes: pool.storedBytes },
                ).map((line) => (
                  <li key={line}>{line}</li>
                ))}
              </ul>
              <div className="actions start">
                <button type="button" className="primary" disabled={saving} onClick={() => void apply()}>
                  {saving ? 'Applying…' : 'Apply new policy'}
                </button>
                <button type="button" disabled={saving} onClick={reset}>
                  Keep the current one
                </button>
              </div>
            </div>
          )}
        </>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
