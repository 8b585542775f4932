/** Small inline icons: they look the same on every system, with or without an emoji font. */

const common = {
  width: 16,
  height: 16,
  viewBox: '0 0 16 16',
  'aria-hidden': true,
  focusable: false,
  className: 'icon',
} as const;

export function FolderIcon() {
  return (
    <svg {...common} data-icon="folder">
      <path
        d="M1.5 3.5a1 1 0 0 1 1-1h3.6l1.5 1.5h5.9a1 1 0 0 1 1 1v7.5a1 1 0 0 1-1 1h-11a1 1 0 0 1-1-1z"
        fill="currentColor"
        opacity="0.85"
      />
    </svg>
  );
}

export function FileIcon() {
  return (
    <svg {...common} data-icon="file">
      <path
        d="M3.5 1.5h6l3 3v10h-9z M9.5 1.5v3h3"
        fill="none"
        stroke="currentColor"
        strokeWidth="1.2"
        strokeLinejoin="round"
      />
    </svg>
  );
}

export function LinkIcon() {
  return (
    <svg {...common} data-icon="link">
      <path
        d="M3 12.5c0-4 2.5-6.5 7-6.5h2.5 M10 3.5 12.5 6 10 8.5"
        fill="none"
        stroke="currentColor"
        strokeWidth="1.4"
        strokeLinecap="round"
        strokeLinejoin="round"
      />
    </svg>
  );
}

export function EntryIcon({ kind }: { kind: 'file' | 'dir' | 'symlink' | 'other' }) {
  return kind === 'dir' ? <FolderIcon /> : kind === 'symlink' ? <LinkIcon /> : <FileIcon />;
}
