/**
 * Electron main process: one window, IPC handlers over the shared AppService, and a tray (menu bar)
 * icon that keeps Cairn running after the window closes, so that backup plans still start when due.
 * Everything else (engine, jobs, scheduler, validation) lives in modules that never import electron.
 */
import '../shared/node/small-heap.ts';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  BrowserWindow,
  Menu,
  Notification,
  Tray,
  app,
  dialog,
  ipcMain,
  nativeImage,
  session,
  shell,
  type IpcMainInvokeEvent,
} from 'electron';
import { EVENT_NAMES, isMethod, parseRequest, type EventName } from '../shared/api/contract.ts';
import { AppService, toApiError } from '../shared/node/app/service.ts';
import { restoredFolder } from '../shared/node/app/restore-view.ts';
import { folderOf, openDialogOptions, openDialogRequest } from './open-dialog.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const rendererIndex = path.join(here, '..', 'renderer', 'index.html');
const rendererUrl = pathToFileURL(rendererIndex).href;
const EVENTS: readonly EventName[] = EVENT_NAMES;

// Copied beside the bundle by bin/build-electron.js (tray@2x.png next to it serves high-DPI screens).
const trayIcon = path.join(here, 'tray.png');

let service: AppService | null = null;
let win: BrowserWindow | null = null;
let tray: Tray | null = null;
let quitting = false;

function trustedSender(e: IpcMainInvokeEvent): boolean {
  return (
    // The folder with its trailing separator: "…/renderer-evil/" must not pass for "…/renderer".
    e.senderFrame?.url.startsWith(pathToFileURL(path.dirname(rendererIndex) + path.sep).href) === true &&
    e.sender === win?.webContents
  );
}

function createWindow(): void {
  win = new BrowserWindow({
    width: 1280,
    height: 860,
    minWidth: 900,
    minHeight: 600,
    title: 'Cairn',
    backgroundColor: '#151917',
    webPreferences: {
      preload: path.join(here, 'preload.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false,
    },
  });
  win.webContents.on('will-navigate', (e, url) => {
    if (url !== rendererUrl) e.preventDefault();
  });
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (url.startsWith('https://')) void shell.openExternal(url);
    return { action: 'deny' };
  });
  win.on('closed', () => (win = null));
  void win.loadFile(rendererIndex);
}

function showWindow(): void {
  if (!win) createWindow();
  else {
    if (win.isMinimized()) win.restore();
    win.show();
    win.focus();
  }
}

/** The tray (menu bar) icon: Cairn keeps running there, with its plans, after the window closes. */
function createTray(): Tray | null {
  const image = nativeImage.createFromPath(trayIcon);
  if (image.isEmpty()) return null;
  if (process.platform === 'darwin') image.setTemplateImage(true);
  const t = new Tray(image);
  t.setToolTip('Cairn: backup plans run while it is here');
  t.setContextMenu(
    Menu.buildFromTemplate([
      { label: 'Open Cairn', click: showWindow },
      { type: 'separator' },
      {
        label: 'Quit Cairn (plans stop running)',
        click: () => {
          quitting = true;
          app.quit();
        },
      },
    ]),
  );
  t.on('click', showWindow);
  return t;
}

/** A plan that failed says so even when no window is open. Cancelled runs were the user's choice. */
function notifyFailures(s: AppService): void {
  s.plans.onOutcome((o) => {
    if (o.ok || o.cancelled || !Notification.isSupported()) return;
    const n = new Notification({
      title: `Backup plan "${o.plan}" failed`,
      body: o.error ?? 'The backup did not finish.',
    });
    n.on('click', showWindow);
    n.show();
  });
}

app.whenReady().then(() => {
  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    callback({
      responseHeaders: {
        ...details.responseHeaders,
        'Content-Security-Policy': [
          "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'none'; object-src 'none'; base-uri 'none'",
        ],
      },
    });
  });
  session.defaultSession.setPermissionRequestHandler((_wc, _perm, cb) => cb(false));
  Menu.setApplicationMenu(null);
  service = new AppService('electron');
  notifyFailures(service);
  ipcMain.handle('cairn:invoke', async (e, method: unknown, request: unknown) => {
    if (!trustedSender(e)) throw new Error('Refused: the request did not come from the Cairn window.');
    if (!isMethod(method)) throw new Error(`Unknown method ${String(method)}.`);
    try {
      return { ok: true, result: await service!.call(method, parseRequest(method, request)) };
    } catch (err) {
      const a = toApiError(err);
      return { ok: false, error: { message: a.message, field: a.field } };
    }
  });
  let lastFolder = app.getPath('home');
  ipcMain.handle('cairn:open-dialog', async (e, request: unknown) => {
    if (!trustedSender(e)) throw new Error('Refused: the request did not come from the Cairn window.');
    const options = openDialogOptions(request, lastFolder);
    const r = win ? await dialog.showOpenDialog(win, options) : await dialog.showOpenDialog(options);
    if (r.canceled) return [];
    lastFolder = folderOf(openDialogRequest.parse(request).mode, r.filePaths) ?? lastFolder;
    return r.filePaths;
  });
  ipcMain.handle('cairn:open-folder', async (e, request: unknown) => {
    if (!trustedSender(e)) throw new Error('Refused: the request did not come from the Cairn window.');
    const problem = await shell.openPath(restoredFolder(service!.jobs.list(), request));
    if (problem) throw new Error(problem);
  });
  for (const event of EVENTS) {
    service.jobs.events.on(event, (payload) => win?.webContents.send('cairn:event', event, payload));
  }
  createWindow();
  tray = createTray();
});

app.on('activate', () => {
  if (app.isReady()) showWindow();
});

app.on('window-all-closed', () => {
  // With a tray icon Cairn stays running (its plans with it) until "Quit Cairn"; without one, it quits.
  if (!tray || quitting) app.quit();
});

app.on('before-quit', (e) => {
  quitting = true;
  tray?.destroy();
  tray = null;
  const closing = service;
  if (!closing) return;
  // Running jobs stop first (a backup stays resumable), then the keystore closes, then Cairn quits.
  e.preventDefault();
  service = null;
  void closing.close().finally(() => app.quit());
});
