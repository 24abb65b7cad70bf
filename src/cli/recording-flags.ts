import { DEFAULT_RECORD_MAX_BYTES, RecordingControl } from '../replay/control.ts';

/** The flags of `haprx run` and `haprx local` that record the graph's inputs (docs/replay.md). */
export const RECORD_OPTIONS = {
  record: { type: 'string' },
  'record-max-bytes': { type: 'string' },
} as const;

export const RECORD_USAGE = `  --record FILE           record the graph's inputs and events to FILE (JSON Lines,
                          Secret values and credentials scrubbed; off without it).
                          SIGUSR2 stops the recording; the next SIGUSR2 starts a
                          new one (FILE-2, FILE-3, …), rebuilding the graph so that
                          it begins with a sync. Replay it with \`haprx replay FILE\`
  --record-max-bytes N    the recording stops at this size (default ${DEFAULT_RECORD_MAX_BYTES})
`;

export interface RecordFlags {
  file?: string;
  maxBytes: number;
}

/** Checks the flags before anything starts. */
export function parseRecordFlags(values: { record?: string | undefined; 'record-max-bytes'?: string | undefined }): { ok: true; flags: RecordFlags } | { ok: false; message: string } {
  const text = values['record-max-bytes'];
  const maxBytes = text === undefined ? DEFAULT_RECORD_MAX_BYTES : Number(text);
  if (text !== undefined && (!/^\d+$/.test(text) || !Number.isSafeInteger(maxBytes) || maxBytes < 4096)) return { ok: false, message: `--record-max-bytes ${text}: expected a number of bytes, at least 4096` };
  if (values.record === undefined && text !== undefined) return { ok: false, message: '--record-max-bytes needs --record FILE' };
  if (values.record === '') return { ok: false, message: '--record: expected a file name' };
  return { ok: true, flags: { ...(values.record !== undefined && { file: values.record }), maxBytes } };
}

interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface Recording {
  control: RecordingControl;
  /** Ends the recording on and closes its file. */
  close(): Promise<void>;
}

/** The recording the flags ask for, SIGUSR2 toggling it; none without `--record` (SIGUSR2 is left alone then). */
export function startRecording(flags: RecordFlags, log: Logger, scrub: (text: string) => string): Recording | undefined {
  if (flags.file === undefined) return undefined;
  const control = new RecordingControl({ file: flags.file, maxBytes: flags.maxBytes, scrub, log: (level, message) => log[level](message) });
  const toggle = () => control.toggle();
  process.on('SIGUSR2', toggle);
  return {
    control,
    close: async () => {
      process.off('SIGUSR2', toggle);
      await control.close();
    },
  };
}
