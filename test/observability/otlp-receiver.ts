/**
 * A minimal OTLP/HTTP trace receiver for tests: accepts POST /v1/traces with a JSON
 * body (ExportTraceServiceRequest, gzip or not), keeps the raw bodies and the decoded
 * spans, and answers as a collector does.
 */
import { type Server, createServer } from 'node:http';
import { gunzipSync } from 'node:zlib';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  /** Milliseconds since the epoch. */
  start: number;
  end: number;
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
  links: { traceId: string; spanId: string }[];
  resource: Record<string, unknown>;
}

interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
}

interface KeyValue {
  key: string;
  value: AnyValue;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: KeyValue[];
  status?: { code?: number; message?: string };
  links?: { traceId: string; spanId: string }[];
}

interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function decodeValue(value: AnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(decodeValue);
  return undefined;
}

function decodeAttributes(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, decodeValue(kv.value)]));
}

/** OTLP JSON carries ids as hex; a protobuf-style base64 id is turned into hex too. */
function hexId(id: string): string {
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

const nanosToMs = (nanos: string | number) => Number(BigInt(nanos) / 1_000_000n);

export function decodeExport(request: ExportRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans ?? []) {
    const resource = decodeAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        spans.push({
          traceId: hexId(s.traceId),
          spanId: hexId(s.spanId),
          ...(s.parentSpanId && { parentSpanId: hexId(s.parentSpanId) }),
          name: s.name,
          kind: s.kind ?? 0,
          start: nanosToMs(s.startTimeUnixNano),
          end: nanosToMs(s.endTimeUnixNano),
          attributes: decodeAttributes(s.attributes),
          status: { code: s.status?.code ?? 0, ...(s.status?.message && { message: s.status.message }) },
          links: (s.links ?? []).map((l) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
          resource,
        });
      }
    }
  }
  return spans;
}

export interface OtlpReceiver {
  port: number;
  spans: ReceivedSpan[];
  /** Every request body as received (decompressed), for grepping. */
  bodies: string[];
  /** Requests that were not OTLP/HTTP JSON traces. */
  rejected: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const rejected: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const type = req.headers['content-type'] ?? '';
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !type.startsWith('application/json')) {
        rejected.push(`${req.method} ${req.url} ${type}`);
        res.writeHead(415).end();
        return;
      }
      const text = body.toString('utf8');
      bodies.push(text);
      try {
        spans.push(...decodeExport(JSON.parse(text) as ExportRequest));
      } catch (err) {
        rejected.push(`undecodable: ${(err as Error).message}`);
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('receiver has no address');
  return {
    port: address.port,
    spans,
    bodies,
    rejected,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
