import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * The controller's logger: JSON lines by default (for log collectors), pretty and
 * coloured when standard output is a terminal. HAPRX_LOG_LEVEL sets the level.
 */
export function createLogger(options: { pretty?: boolean; level?: string } = {}): Logger {
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  const level = options.level ?? process.env.HAPRX_LOG_LEVEL ?? 'info';
  return pino({
    level,
    base: undefined,
    // Never log these, wherever they appear in a logged object.
    redact: { paths: ['password', '*.password', 'authorization', '*.authorization', 'key', '*.key'], censor: '[redacted]' },
    ...(pretty && { transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' } } }),
  });
}
