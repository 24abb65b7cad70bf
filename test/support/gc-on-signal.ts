/**
 * Preloaded into a child process started with --expose-gc (`node --expose-gc --import
 * <this file> ...`): a full garbage collection on SIGUSR2, so that a test reads the
 * heap that live objects hold rather than whatever garbage is waiting.
 */
const collect = (globalThis as { gc?: () => void }).gc;
if (collect) process.on('SIGUSR2', () => collect());
