/** A repository in a bucket that is not what it should be, named with the target that holds it. */
export class RepositoryError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RepositoryError';
  }
}
