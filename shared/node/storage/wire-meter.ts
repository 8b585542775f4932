/**
 * Bytes this thread has put on the wire and taken off it (request and response bodies of uploads and
 * downloads, as the socket accepts them, and a folder target's writes): what a job's throughput shows,
 * rather than a pack's bytes all at once when its upload ends. Each worker thread has its own and
 * reports what it added (workers/chunk-worker.ts).
 */
export const wireMeter = { sent: 0, received: 0 };
