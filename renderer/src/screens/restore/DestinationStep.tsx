import { useState } from 'react';
import { FilePicker } from '../../components/FilePicker.tsx';
import { nativeOpenDialog } from '../../components/native-dialog.ts';
import { messageOf } from '../../api/format.ts';
import type { WizardAction, WizardState } from './wizard-state.ts';
import { ExistingPolicy } from '../../components/ExistingPolicy.tsx';

/** Step 3: where to restore (typed, the native dialog in Electron, or the engine's browser) and what to do with files already there. */
export function DestinationStep({
  state: s,
  dispatch,
}: {
  state: WizardState;
  dispatch: (a: WizardAction) => void;
}) {
  const [browsing, setBrowsing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const browse = () => {
    const native = nativeOpenDialog();
    if (!native) return setBrowsing(true);
    native({ mode: 'folder', title: 'Choose the destination folder', defaultPath: s.to || undefined }).then(
      ([p]) => p && dispatch({ t: 'to', path: p }),
      (e) => setError(messageOf(e)),
    );
  };
  return (
    <section aria-label="Destination" className="form">
      <label>
        Restore into this folder
        <div className="row">
          <input
            className="grow"
            aria-label="Destination folder"
            value={s.to}
            onChange={(e) => dispatch({ t: 'to', path: e.target.value })}
            placeholder="/home/you/restored"
          />
          <button type="button" onClick={browse}>
            Browse…
          </button>
        </div>
      </label>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <ExistingPolicy
        name="existing"
        value={s.existing}
        onChange={(value) => dispatch({ t: 'existing', value })}
      />
      {browsing && (
        <FilePicker
          title="Choose the destination folder"
          mode="folder"
          start={s.to || undefined}
          onClose={() => setBrowsing(false)}
          onChoose={([p]) => (setBrowsing(false), dispatch({ t: 'to', path: p! }))}
        />
      )}
    </section>
  );
}
