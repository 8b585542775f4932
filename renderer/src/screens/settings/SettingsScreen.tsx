import { useState } from 'react';
import type { TargetView } from '../../../../shared/api/views.ts';
import { targetWhere } from '../../../../shared/settings.ts';
import { getApi } from '../../api/bridge.ts';
import { useQuery } from '../../api/hooks.ts';
import { messageOf } from '../../api/format.ts';
import { MaintenanceSection } from './MaintenanceSection.tsx';
import { PipelineForm } from './PipelineForm.tsx';
import { BandwidthForm } from './BandwidthForm.tsx';
import { TargetForm } from './TargetForm.tsx';

export function SettingsScreen() {
  const targets = useQuery('targets.list', {});
  const settings = useQuery('settings.get', {});
  const [editing, setEditing] = useState<TargetView | 'new' | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Removing a target is asked twice: the first click only says what it means.
  const [confirming, setConfirming] = useState<string | null>(null);

  const remove = async (name: string) => {
    setError(null);
    setConfirming(null);
    try {
      await getApi().invoke('targets.remove', { name });
      if (editing !== 'new' && editing?.name === name) setEditing(null);
      targets.reload();
    } catch (e) {
      setError(messageOf(e));
    }
  };

  return (
    <div className="screen">
      <header className="screen-head">
        <h1>Settings</h1>
      </header>
      <section aria-label="Targets">
        <h2>Buckets and folders</h2>
        {targets.data?.length === 0 && editing === null && (
          <p className="muted">No target yet: add the bucket (or folder) your backups go to.</p>
        )}
        <ul className="targets">
          {targets.data?.map((t) => (
            <li key={t.name} className="card target" data-testid="target">
              <div>
                <strong>{t.name}</strong>{' '}
                <span className="badge">{t.config.kind === 's3' ? 'S3' : 'folder'}</span>
                <div className="muted">{targetWhere(t.config)}</div>
              </div>
              <div className="actions">
                <button type="button" onClick={() => setEditing(t)}>
                  Edit
                </button>
                <button type="button" className="danger" onClick={() => setConfirming(t.name)}>
                  Remove
                </button>
              </div>
              {confirming === t.name && (
                <div className="confirm" role="alertdialog" aria-label={`Remove ${t.name}?`}>
                  <p>
                    Remove “{t.name}” from this repository? Nothing in it is deleted, but backups stop using
                    it. In a pool, a target that still holds copies or shards is refused: drain it first
                    (Drain on the Storage screen), so the other targets take what it holds.
                  </p>
                  <div className="actions start">
                    <button type="button" className="danger" onClick={() => void remove(t.name)}>
                      Remove “{t.name}”
                    </button>
                    <button type="button" onClick={() => setConfirming(null)}>
                      Keep it
                    </button>
                  </div>
                </div>
              )}
            </li>
          ))}
        </ul>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {editing === null ? (
          <button type="button" className="primary" onClick={() => setEditing('new')}>
            Add a target
          </button>
        ) : (
          <TargetForm
            key={editing === 'new' ? 'new' : editing.name}
            editing={editing === 'new' ? null : editing}
            onCancel={() => setEditing(null)}
            onSaved={() => {
              setEditing(null);
              targets.reload();
            }}
          />
        )}
      </section>
      <section aria-label="Maintenance">
        <h2>Maintenance</h2>
        <MaintenanceSection />
      </section>
      <section aria-label="Pipeline">
        <h2>Performance</h2>
        {settings.data && <PipelineForm settings={settings.data} onSaved={() => settings.reload()} />}
      </section>
      <section aria-label="Bandwidth">
        <h2>Bandwidth</h2>
        {settings.data && <BandwidthForm settings={settings.data} onSaved={() => settings.reload()} />}
      </section>
    </div>
  );
}
