/**
 * The only bridge between the sandboxed renderer and the main process: one namespaced object with
 * invoke, subscribe, the path of a dropped file, the native open dialog and opening a restored folder.
 * Nothing else crosses.
 */
import { contextBridge, ipcRenderer, webUtils } from 'electron';

type Listener = (payload: unknown) => void;
const listeners = new Map<string, Set<Listener>>();
ipcRenderer.on('cairn:event', (_e, event: string, payload: unknown) =>
  listeners.get(event)?.forEach((fn) => fn(payload)),
);

class ApiCallError extends Error {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiCallError';
  }
}

contextBridge.exposeInMainWorld('cairn', {
  async invoke(method: string, request: unknown) {
    const r = (await ipcRenderer.invoke('cairn:invoke', method, request)) as
      { ok: true; result: unknown } | { ok: false; error: { message: string; field?: string } };
    if (!r.ok) throw new ApiCallError(r.error.message, r.error.field);
    return r.result;
  },
  subscribe(event: string, listener: Listener) {
    let set = listeners.get(event);
    if (!set) listeners.set(event, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  },
  pathForFile(file: File) {
    return webUtils.getPathForFile(file);
  },
  /** shell.openPath on a folder a finished restore job wrote into (its index among the job's folders). */
  async openRestoredFolder(request: { jobId: string; index: number }) {
    await ipcRenderer.invoke('cairn:open-folder', request);
  },
  /** dialog.showOpenDialog in the main process; the chosen paths, [] when cancelled. */
  async openDialog(request: { mode: 'files' | 'folders' | 'folder'; title: string; defaultPath?: string }) {
    return (await ipcRenderer.invoke('cairn:open-dialog', request)) as string[];
  },
});
