import { useState } from 'react';
import { FilePicker } from '../../components/FilePicker.tsx';
import { nativeOpenDialog } from '../../components/native-dialog.ts';
import { messageOf } from '../../api/format.ts';
import type { WizardAction, WizardState } from './wizard-state.ts';
import { ExistingPolicy } from '../../components/ExistingPolicy.tsx';

/**
 * Step 3: where to restore (a folder typed, chosen in the native dialog in Electron or the engine's
 * browser; or back where the files were backed up from) and what to do with files already there.
 */
export function DestinationStep({
  state: s,
  sources,
  dispatch,
}: {
  state: WizardState;
  /** The chosen backup's sources: where "back where they were" writes. */
  sources: readonly string[];
  dispatch: (a: WizardAction) => void;
}) {
  const parents = [...new Set(sources.map((p) => p.replace(/\/+$/, '').replace(/\/[^/]*$/, '') || '/'))];
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
      <fieldset className="destination">
        <legend>Where to</legend>
        <label className="inline">
          <input
            type="radio"
            name="wizard-where"
            checked={s.where === 'folder'}
            onChange={() => dispatch({ t: 'where', value: 'folder' })}
          />{' '}
          Into this folder
        </label>
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
        <label className="inline">
          <input
            type="radio"
            name="wizard-where"
            checked={s.where === 'original'}
            disabled={sources.length === 0}
            onChange={() => dispatch({ t: 'where', value: 'original' })}
          />{' '}
          Back where they were backed up from
        </label>
        {sources.length > 0 && (
          <p className="muted small" data-testid="original-folders">
            Into{' '}
            {parents.map((p, i) => (
              <span key={p}>
                {i > 0 && ', '}
                <code>{p}</code>
              </span>
            ))}
          </p>
        )}
      </fieldset>
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
