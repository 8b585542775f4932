/**
 * The native open dialog for the renderer: "Add files…", "Add folders…" and the restore destination.
 * The request is checked here (it comes from the renderer), and the dialog starts in the folder last
 * chosen, or the home folder.
 */
import path from 'node:path';
import type { OpenDialogOptions } from 'electron';
import * as z from 'zod';

export const openDialogRequest = z.object({
  mode: z.enum(['files', 'folders', 'folder']),
  title: z.string().max(200),
  defaultPath: z.string().max(4096).optional(),
});
export type OpenDialogRequest = z.infer<typeof openDialogRequest>;

const PROPERTIES: Record<OpenDialogRequest['mode'], OpenDialogOptions['properties']> = {
  // Windows and Linux cannot offer files and folders in one dialog: the renderer asks for one or the other.
  files: ['openFile', 'multiSelections'],
  folders: ['openDirectory', 'multiSelections'],
  folder: ['openDirectory', 'createDirectory', 'promptToCreate'],
};

/** Builds the options of dialog.showOpenDialog; throws a sentence naming what was wrong in the request. */
export function openDialogOptions(request: unknown, lastFolder: string): OpenDialogOptions {
  const r = openDialogRequest.safeParse(request);
  if (!r.success)
    throw new Error(`Refused an open-dialog request: ${r.error.issues[0]?.message ?? 'invalid'}.`);
  const start = r.data.defaultPath && path.isAbsolute(r.data.defaultPath) ? r.data.defaultPath : lastFolder;
  return {
    title: r.data.title,
    defaultPath: start,
    buttonLabel: r.data.mode === 'folder' ? 'Restore here' : 'Add',
    properties: PROPERTIES[r.data.mode],
  };
}

/** The folder a next dialog should open in: the chosen folder, or the folder of the first chosen file. */
export function folderOf(mode: OpenDialogRequest['mode'], chosen: string[]): string | null {
  const first = chosen[0];
  if (!first) return null;
  return mode === 'folder' ? first : path.dirname(first);
}
