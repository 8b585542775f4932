import { useEffect, useState } from 'react';
import type { AppStatus } from '../../shared/api/views.ts';
import { getApi } from './api/bridge.ts';
import { messageOf } from './api/format.ts';
import { BackupScreen } from './screens/BackupScreen.tsx';
import { HistoryScreen } from './screens/HistoryScreen.tsx';
import { ProtectedScreen } from './screens/protected/ProtectedScreen.tsx';
import { PlansScreen } from './screens/plans/PlansScreen.tsx';
import { BrowseScreen } from './screens/browse/BrowseScreen.tsx';
import { RestoreWizard } from './screens/restore/RestoreWizard.tsx';
import { SearchScreen } from './screens/search/SearchScreen.tsx';
import { SettingsScreen } from './screens/settings/SettingsScreen.tsx';
import { StorageScreen } from './screens/storage/StorageScreen.tsx';
import { UnlockScreen } from './screens/UnlockScreen.tsx';
import { AttentionBanner } from './components/AttentionBanner.tsx';

type Tab = 'backup' | 'plans' | 'protected' | 'history' | 'search' | 'restore' | 'storage' | 'settings';
const TABS: { id: Tab; label: string }[] = [
  { id: 'backup', label: 'Back up' },
  { id: 'plans', label: 'Plans' },
  { id: 'protected', label: 'Protected' },
  { id: 'history', label: 'History' },
  { id: 'search', label: 'Search' },
  { id: 'restore', label: 'Restore' },
  { id: 'storage', label: 'Storage' },
  { id: 'settings', label: 'Settings' },
];

export function App() {
  const [status, setStatus] = useState<AppStatus | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tab, setTab] = useState<Tab>('backup');
  const [restoreBackup, setRestoreBackup] = useState<string | null>(null);
  const [browseBackup, setBrowseBackup] = useState<string | null>(null);
  const [planSources, setPlanSources] = useState<string[] | null>(null);
  const [engineUp, setEngineUp] = useState(true);
  useEffect(() => getApi().onConnection?.(setEngineUp), []);

  useEffect(() => {
    getApi()
      .invoke('app.status', {})
      .then(setStatus, (e) => setError(messageOf(e)));
  }, []);

  if (error) {
    return (
      <main className="unlock">
        <div className="card unlock-card">
          <h1>Cairn cannot reach its engine</h1>
          <p className="error">{error}</p>
          <p className="muted">
            Open the address Cairn printed when it started (it carries the session token).
          </p>
        </div>
      </main>
    );
  }
  if (!status) return <main className="unlock muted">Starting…</main>;
  if (status.state !== 'unlocked') return <UnlockScreen status={status} onUnlocked={setStatus} />;

  return (
    <div className="app" data-engine={engineUp ? 'up' : 'lost'}>
      {!engineUp && (
        <div className="engine-lost" role="alert">
          Cairn’s engine stopped answering: what is shown may be out of date, and running jobs are no longer
          tracked. Start Cairn again, then reload this page.
        </div>
      )}
      <nav className="sidebar" aria-label="Main">
        <div className="brand">
          <img src="./favicon.svg" alt="" width={28} height={28} /> Cairn
        </div>
        {TABS.map((t) => (
          <button
            key={t.id}
            type="button"
            className={`nav${tab === t.id ? ' active' : ''}`}
            aria-current={tab === t.id ? 'page' : undefined}
            onClick={() => (setTab(t.id), setBrowseBackup(null))}
          >
            {t.label}
          </button>
        ))}
        <div className="sidebar-foot muted">
          {status.shell === 'web' ? 'Web mode' : 'Desktop'} · {status.cpuCount} cores
        </div>
      </nav>
      <main className="content">
        <AttentionBanner desktop={status.shell === 'electron'} />
        {tab === 'backup' && (
          <BackupScreen
            onGoToSettings={() => setTab('settings')}
            onGoToStorage={() => setTab('storage')}
            onMakePlan={(sources) => {
              setPlanSources(sources);
              setTab('plans');
            }}
          />
        )}
        {tab === 'plans' && (
          <PlansScreen draftSources={planSources} onDraftUsed={() => setPlanSources(null)} />
        )}
        {tab === 'protected' && (
          <ProtectedScreen
            host={status.host}
            onBrowse={(id) => {
              setBrowseBackup(id);
              setTab('history');
            }}
          />
        )}
        {tab === 'history' && browseBackup && (
          <BrowseScreen backupId={browseBackup} onBack={() => setBrowseBackup(null)} />
        )}
        {tab === 'history' && !browseBackup && (
          <HistoryScreen
            onBrowse={setBrowseBackup}
            onRestore={(id) => {
              setRestoreBackup(id);
              setTab('restore');
            }}
          />
        )}
        {tab === 'restore' && <RestoreWizard key={restoreBackup ?? 'none'} initialBackup={restoreBackup} />}
        {tab === 'search' && <SearchScreen />}
        {tab === 'storage' && <StorageScreen onGoToSettings={() => setTab('settings')} />}
        {tab === 'settings' && <SettingsScreen />}
      </main>
    </div>
  );
}
