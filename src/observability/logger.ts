import { type DestinationStream, type Logger, pino } from 'pino';
import { printable } from '../printable.ts';

export type { Logger };

/** Field names that may hold a credential, wherever they appear in a logged object (two levels deep). */
const SECRET_FIELDS = ['password', 'authorization', 'key', 'privateKey', 'token', 'secret', 'cookie', 'data', 'stringData'];
export const REDACT_PATHS = SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`]);

export interface LoggerOptions {
  /** Pretty, coloured lines; by default when standard output is a terminal. */
  pretty?: boolean;
  level?: string;
  /** Where JSON lines go (standard output by default); tests pass a stream. */
  destination?: DestinationStream;
}

/**
 * The controller's logger: JSON lines by default (for log collectors), pretty and
 * coloured when standard output is a terminal. HAPRX_LOG_LEVEL sets the level.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const pretty = options.pretty ?? (options.destination === undefined && process.stdout.isTTY === true);
  const level = options.level ?? process.env.HAPRX_LOG_LEVEL ?? 'info';
  const settings = {
    level,
    base: undefined,
    // Never log these, wherever they appear in a logged object.
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    // Messages quote cluster values: a newline in a name must not print a line of its own
    // (fields are JSON in every output, pretty included, so they are escaped already).
    hooks: {
      logMethod(this: Logger, args: unknown[], method: (...a: unknown[]) => void) {
        method.apply(this, args.map((a) => (typeof a === 'string' ? printable(a) : a)));
      },
    },
    ...(pretty && { transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' } } }),
  };
  return options.destination && !pretty ? pino(settings, options.destination) : pino(settings);
}
