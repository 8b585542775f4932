import type { CairnApi } from '../../../shared/api/contract.ts';
import { createWebBridge } from './web-bridge.ts';

/** What a native open dialog is asked for: files, folders (several), or one destination folder. */
export interface OpenDialogRequest {
  mode: 'files' | 'folders' | 'folder';
  title: string;
  defaultPath?: string;
}

/** What the Electron preload exposes on window.cairn (see electron/preload.ts). */
export interface PreloadApi extends CairnApi {
  pathForFile(file: File): string;
  /** Electron's dialog.showOpenDialog; resolves to the chosen paths, [] when cancelled. */
  openDialog?(request: OpenDialogRequest): Promise<string[]>;
  /** Shows a folder a finished restore job wrote into in the system's file manager (Electron only). */
  openRestoredFolder?(request: { jobId: string; index: number }): Promise<void>;
}

declare global {
  interface Window {
    cairn?: PreloadApi;
  }
}

let api: CairnApi | null = null;

/** The preload bridge inside Electron, else the web bridge (token from the page's URL fragment). */
export function getApi(): CairnApi {
  api ??= window.cairn ?? createWebBridge(window.location);
  return api;
}

/** Absolute paths of dropped files: Electron knows them; a browser only gets file:// URIs. */
export function pathsFromDrop(dt: DataTransfer): string[] {
  const preload = window.cairn;
  if (preload && dt.files.length > 0) {
    return Array.from(dt.files)
      .map((f) => preload.pathForFile(f))
      .filter(Boolean);
  }
  const uris = dt.getData('text/uri-list');
  return uris
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#') && l.startsWith('file://'))
    .map((l) => decodeURIComponent(new URL(l).pathname));
}
