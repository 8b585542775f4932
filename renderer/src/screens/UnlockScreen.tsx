import { useState } from 'react';
import type { AppStatus } from '../../../shared/api/views.ts';
import { getApi } from '../api/bridge.ts';
import { messageOf } from '../format.ts';

/** First run: choose a passphrase (twice). Later: unlock the keystore with it. */
export function UnlockScreen({
  status,
  onUnlocked,
}: {
  status: AppStatus;
  onUnlocked: (s: AppStatus) => void;
}) {
  const creating = status.state === 'no-keystore';
  const [pass, setPass] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (creating && pass !== again) return setError('The two passphrases differ.');
    setBusy(true);
    try {
      onUnlocked(await getApi().invoke(creating ? 'app.init' : 'app.unlock', { passphrase: pass }));
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="unlock">
      <form className="card unlock-card" onSubmit={submit}>
        <img src="./favicon.svg" alt="" width={48} height={48} />
        <h1>{creating ? 'Welcome to Cairn' : 'Unlock Cairn'}</h1>
        <p className="muted">
          {creating
            ? 'Choose a passphrase. It protects the key that encrypts every backup; without it nothing can be restored, so keep it safe.'
            : `Enter the passphrase of the keystore in ${status.home}.`}
        </p>
        <label>
          Passphrase
          <input
            type="password"
            autoFocus
            autoComplete={creating ? 'new-password' : 'current-password'}
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
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={busy || pass.length === 0}>
          {busy ? 'Working…' : creating ? 'Create keystore' : 'Unlock'}
        </button>
      </form>
    </main>
  );
}
