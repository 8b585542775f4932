import { useState } from 'react';
import type { AppStatus } from '../../../shared/api/views.ts';
import { getApi } from '../api/bridge.ts';
import { messageOf } from '../api/format.ts';
import { ConnectForm } from './ConnectForm.tsx';

const DERIVING = 'Deriving the key from your passphrase (Argon2id, 128 MiB: about half a second)…';

/**
 * First run: create a repository (passphrase twice, then the recovery key, shown once and confirmed), or
 * open existing backups from their bucket. Later: unlock with the passphrase or the recovery key.
 */
export function UnlockScreen({
  status,
  onUnlocked,
}: {
  status: AppStatus;
  onUnlocked: (s: AppStatus) => void;
}) {
  const creating = status.state === 'no-keystore';
  const [mode, setMode] = useState<'choose' | 'create' | 'connect'>(creating ? 'choose' : 'create');
  const [pass, setPass] = useState('');
  const [again, setAgain] = useState('');
  const [useRecovery, setUseRecovery] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<{ status: AppStatus; recoveryKey: string } | null>(null);
  const [stored, setStored] = useState(false);
  const [copied, setCopied] = useState<string | null>(null);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (creating && pass !== again) return setError('The two passphrases differ.');
    setBusy(true);
    setError(null);
    try {
      if (creating) {
        const s = await getApi().invoke('app.init', { passphrase: pass });
        const { recoveryKey } = await getApi().invoke('keys.recovery', {});
        setCreated({ status: s, recoveryKey });
      } else {
        onUnlocked(
          await getApi().invoke('app.unlock', useRecovery ? { recoveryKey: pass } : { passphrase: pass }),
        );
      }
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  if (created) {
    return (
      <main className="unlock">
        <section className="card unlock-card recovery-card" aria-label="Recovery key">
          <h1>Your recovery key</h1>
          <p className="muted">
            It opens your backups if the passphrase is forgotten, from any computer. It is shown only now:
            write it down or print it, and keep it away from this computer.
          </p>
          <p className="recovery-key" data-testid="recovery-key">
            {created.recoveryKey}
          </p>
          <div className="recovery-actions">
            <button
              type="button"
              onClick={() =>
                navigator.clipboard.writeText(created.recoveryKey).then(
                  () => setCopied('Copied.'),
                  () => setCopied('The clipboard refused it: select the key and copy it by hand.'),
                )
              }
            >
              Copy
            </button>
            <button type="button" onClick={() => window.print()}>
              Print
            </button>
            {copied && (
              <span role="status" className="muted">
                {copied}
              </span>
            )}
          </div>
          <label className="check">
            <input type="checkbox" checked={stored} onChange={(e) => setStored(e.target.checked)} /> I have
            stored the recovery key somewhere safe
          </label>
          <button
            type="button"
            className="primary"
            disabled={!stored}
            onClick={() => onUnlocked(created.status)}
          >
            Continue
          </button>
        </section>
      </main>
    );
  }

  if (mode === 'choose') {
    return (
      <main className="unlock">
        <section className="card unlock-card" aria-label="Welcome">
          <img src="./favicon.svg" alt="" width={48} height={48} />
          <h1>Welcome to Cairn</h1>
          <p className="muted">Encrypted backups to buckets you own.</p>
          <button type="button" className="primary" onClick={() => setMode('create')}>
            Start new backups
          </button>
          <button type="button" onClick={() => setMode('connect')}>
            Open existing backups
          </button>
        </section>
      </main>
    );
  }

  if (mode === 'connect') {
    return (
      <main className="unlock">
        <ConnectForm onConnected={onUnlocked} onBack={() => setMode('choose')} />
      </main>
    );
  }

  return (
    <main className="unlock">
      <form className="card unlock-card" onSubmit={submit}>
        <img src="./favicon.svg" alt="" width={48} height={48} />
        <h1>{creating ? 'Start new backups' : 'Unlock Cairn'}</h1>
        <p className="muted">
          {creating
            ? 'Choose a passphrase. It protects the key that encrypts every backup; without it (or the recovery key you get next) nothing can be restored.'
            : `Enter the ${useRecovery ? 'recovery key' : 'passphrase'} of the backups in ${status.home}.`}
        </p>
        <label>
          {useRecovery ? 'Recovery key' : 'Passphrase'}
          <input
            type="password"
            autoFocus
            autoComplete={creating ? 'new-password' : useRecovery ? 'off' : 'current-password'}
            value={pass}
            onChange={(e) => setPass(e.target.value)}
          />
        </label>
        {creating && (
          <label>
            Passphrase again
            <input
              type="password"
              autoComplete="new-password"
              value={again}
              onChange={(e) => setAgain(e.target.value)}
            />
          </label>
        )}
        {!creating && (
          <button type="button" className="link" onClick={() => setUseRecovery((x) => !x)}>
            {useRecovery ? 'Use the passphrase instead' : 'Use the recovery key instead'}
          </button>
        )}
        {busy && (
          <p className="muted" role="status">
            <progress /> {useRecovery ? 'Opening…' : DERIVING}
          </p>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <div className="row">
          {creating && (
            <button type="button" onClick={() => setMode('choose')} disabled={busy}>
              Back
            </button>
          )}
          <button type="submit" className="primary" disabled={busy || pass.length === 0}>
            {busy ? 'Working…' : creating ? 'Create' : 'Unlock'}
          </button>
        </div>
      </form>
    </main>
  );
}
