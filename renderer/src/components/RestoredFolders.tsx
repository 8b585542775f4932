import { useState } from 'react';
import type { JobView } from '../../../shared/api/views.ts';
import { messageOf } from '../api/format.ts';

/**
 * After a restore: each folder it wrote into, with "Open folder" in the desktop app (the system's file
 * manager) and "Copy path" in a browser, which cannot open folders of the computer running Cairn.
 */
export function RestoredFolders({ job }: { job: JobView }) {
  const [error, setError] = useState<string | null>(null);
  const [copied, setCopied] = useState<number | null>(null);
  const folders = job.restored?.folders ?? [];
  if (folders.length === 0) return null;
  const open = window.cairn?.openRestoredFolder;
  return (
    <div className="restored-folders" data-testid="restored-folders">
      {folders.map((f, index) => (
        <div key={f} className="row">
          <code className="grow">{f}</code>
          {typeof open === 'function' ? (
            <button
              type="button"
              onClick={() => open({ jobId: job.id, index }).catch((e) => setError(messageOf(e)))}
            >
              Open folder
            </button>
          ) : (
            <button
              type="button"
              aria-label={`Copy the path ${f}`}
              onClick={() =>
                navigator.clipboard.writeText(f).then(
                  () => setCopied(index),
                  (e) => setError(messageOf(e)),
                )
              }
            >
              {copied === index ? 'Copied' : 'Copy path'}
            </button>
          )}
        </div>
      ))}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
