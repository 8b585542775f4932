import type { OpenDialogRequest } from '../api/bridge.ts';

/** Electron's own open dialog, when the app runs in Electron; null in web mode (use FilePicker). */
export function nativeOpenDialog(): ((req: OpenDialogRequest) => Promise<string[]>) | null {
  const open = window.cairn?.openDialog;
  return typeof open === 'function' ? (req) => open(req) : null;
}
