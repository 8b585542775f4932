/** A setting or request field that cannot be taken, named (browser-safe: the UI and the engine share it). */
export class SettingsError extends Error {
  /** The input it is about (a request field such as "schedule.at"), when one is to blame. */
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'SettingsError';
  }
}
