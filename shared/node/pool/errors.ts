/** A repository in a bucket that is not what it should be, named with the target that holds it. */
export class RepositoryError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RepositoryError';
  }
}

/** A target the pool names that holds no repository (emptied, or pointing elsewhere): `repair` may rejoin it. */
export class MemberWipedError extends RepositoryError {
  constructor(message: string) {
    super(message);
    this.name = 'MemberWipedError';
  }
}
