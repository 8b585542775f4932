import { INSTALL_HINT, findVersitygw } from './versitygw.ts';

/** S3 tests never skip silently: without the server the run fails and says how to install it. */
export default function setup(): void {
  if (!findVersitygw()) throw new Error(INSTALL_HINT);
}
