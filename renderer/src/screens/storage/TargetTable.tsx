import { useState } from 'react';
import type { CopyCountView, PoolTargetView } from '../../../../shared/api/views.ts';
import { formatCount, formatDate, formatSize } from '../../api/format.ts';

const KIND: Record<PoolTargetView['kind'], string> = { s3: 'S3', dir: 'folder', discard: 'discard' };
const STATE_BADGE: Record<PoolTargetView['state'], string> = {
  active: 'badge-done',
  draining: 'badge-paused',
  gone: 'badge-failed',
};

function Copies({ c, empty = '—' }: { c: CopyCountView; empty?: string }) {
  if (c.copies === 0) return <span className="muted">{empty}</span>;
  return (
    <>
      {formatCount(c.copies)} <span className="muted small">· {formatSize(c.bytes)}</span>
    </>
  );
}

/** "checked 22:04" (the full date in its tooltip). */
function Checked({ at }: { at: number }) {
  const time = new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return (
    <div className="muted small" title={formatDate(at)}>
      checked {time}
    </div>
  );
}

function Health({ t }: { t: PoolTargetView }) {
  if (!t.health) return <span className="muted">not checked yet</span>;
  return t.health.ok ? (
    <>
      <span className="success">Reachable</span>
      <Checked at={t.health.at} />
    </>
  ) : (
    <>
      <span className="error">Unreachable</span>
      <Checked at={t.health.at} />
      <div className="error small">{t.health.message}</div>
    </>
  );
}

/**
 * The repository's targets: kind, weight and share, state, the copies the keystore records there
 * (stored, queued for it, found missing) and the outcome of the last check.
 */
/** A change to one member (pool.setTarget): a weight, active again, or drained. */
export type TargetChange = { name: string } & ({ weight: number } | { active: true } | { drain: true });

/** The weight, editable in place: Set appears once it differs. */
function Weight({
  t,
  onChange,
  busy,
}: {
  t: PoolTargetView;
  onChange: (c: TargetChange) => void;
  busy: boolean;
}) {
  const [value, setValue] = useState(String(t.weight));
  const n = Number(value);
  const valid = /^\d+$/.test(value) && n >= 1 && n <= 1_000_000;
  const apply = () => {
    if (valid && !busy && n !== t.weight) onChange({ name: t.name, weight: n });
  };
  return (
    <span className="weight-edit">
      <input
        type="number"
        min={1}
        max={1_000_000}
        value={value}
        aria-label={`Weight of ${t.name}`}
        onChange={(e) => setValue(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') apply();
        }}
      />
      {n !== t.weight && (
        <button type="button" disabled={busy || !valid} onClick={apply}>
          Set
        </button>
      )}
    </span>
  );
}

export function TargetTable({
  targets,
  ec,
  onChange,
  busy,
}: {
  targets: PoolTargetView[];
  ec: boolean;
  onChange: (c: TargetChange) => void;
  busy: boolean;
}) {
  // The share is of the copies (or shards) written: with R copies a target gets one of R × that of packs.
  const unit = ec ? 'shards' : 'copies';
  return (
    <div className="table-scroll">
      <table className="table storage-targets" aria-label="Targets">
        <thead>
          <tr>
            <th>Target</th>
            <th className="kind">Kind</th>
            <th className="num">Weight</th>
            <th>State</th>
            <th className="num">Stored {unit}</th>
            <th className="num">Queued</th>
            <th className="num">Missing</th>
            <th>Health</th>
          </tr>
        </thead>
        <tbody>
          {targets.map((t) => (
            <tr key={t.name} data-testid="pool-target" data-target={t.name} data-state={t.state}>
              <td className="wrap">
                <strong>{t.name}</strong>
                <div className="muted small where">{t.where}</div>
              </td>
              <td className="kind">
                <span className="badge">{KIND[t.kind]}</span>
              </td>
              <td className="num" data-testid="target-weight">
                {/* Weights and draining are the pool's: a target outside it (added while the pool could not be
                    written) shows its weight only. */}
                {t.inPool ? <Weight key={t.weight} t={t} onChange={onChange} busy={busy} /> : t.weight}
                <div className="muted small">
                  {t.state === 'active' ? `${t.share.toFixed(0)} % of new ${unit}` : `no new ${unit}`}
                </div>
              </td>
              <td>
                <span className={`badge ${STATE_BADGE[t.state]}`}>{t.state}</span>
                {t.state !== 'gone' && t.inPool && (
                  <button
                    type="button"
                    className="link small"
                    disabled={busy}
                    onClick={() =>
                      onChange(
                        t.state === 'active' ? { name: t.name, drain: true } : { name: t.name, active: true },
                      )
                    }
                  >
                    {t.state === 'active' ? 'Drain' : 'Make active'}
                  </button>
                )}
                {t.pendingMetadata > 0 && (
                  <div className="muted small" title="Index files and snapshots it missed while out of reach">
                    {formatCount(t.pendingMetadata)} metadata to deliver
                  </div>
                )}
              </td>
              <td className="num" data-testid="target-stored">
                <Copies c={t.stored} empty="none" />
              </td>
              <td className="num" data-testid="target-queued">
                <Copies c={t.queued} />
              </td>
              <td className="num" data-testid="target-missing">
                <Copies c={t.missing} />
              </td>
              <td
                className="wrap health"
                data-testid="target-health"
                data-ok={t.health ? String(t.health.ok) : ''}
              >
                <Health t={t} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
