/** Folder, file and link icons drawn in SVG: they look the same with or without an emoji font. */
export function EntryIcon({ kind }: { kind: 'file' | 'dir' | 'symlink' }) {
  return (
    <svg
      className={`entry-icon entry-icon-${kind}`}
      viewBox="0 0 16 16"
      width="16"
      height="16"
      aria-hidden="true"
    >
      {kind === 'dir' ? (
        <path d="M1.5 3.5h4l1.5 1.5h7.5v8h-13z" />
      ) : (
        <>
          <path d="M3.5 1.5h6l3 3v10h-9z" />
          {kind === 'symlink' && <path d="M5.5 11.5l5-5m-3 0h3v3" fill="none" />}
        </>
      )}
    </svg>
  );
}
