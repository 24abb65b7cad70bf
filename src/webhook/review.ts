/**
 * AdmissionReview `admission.k8s.io/v1`, the only version the webhook answers.
 * Whoever reaches the webhook's port can send one, so the body is read as untrusted
 * data: every field the decision uses is checked for its type here, and what is
 * not needed is never looked at.
 */
import type { KubeObject } from '../k8s/resource.ts';
import { printable } from '../printable.ts';

export const ADMISSION_API_VERSION = 'admission.k8s.io/v1';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** The parts of an AdmissionRequest the webhook reads. */
export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  namespace?: string;
  name?: string;
  operation: Operation;
  object?: KubeObject;
  oldObject?: KubeObject;
}

export type ParsedReview = { ok: true; request: AdmissionRequest } | { ok: false; message: string };

/** What the webhook decided: allowed or not, why, and notes that kubectl shows as warnings. */
export interface Verdict {
  allowed: boolean;
  message?: string;
  warnings?: string[];
}

const OPERATIONS: readonly string[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];
/** UIDs are UUIDs; anything longer is not from an API server. */
const MAX_UID = 128;
/** kubectl shows warnings; the API server may truncate long ones and many of them. */
const MAX_WARNINGS = 10;
const MAX_WARNING_LENGTH = 256;
const MAX_MESSAGE_LENGTH = 4_096;

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === 'string';

function object(v: unknown): KubeObject | undefined | false {
  if (v === undefined || v === null) return undefined;
  if (!isRecord(v) || !isRecord(v.metadata)) return false;
  return v as KubeObject;
}

/** Checks that a parsed body is an AdmissionReview v1 with a request the webhook can read. */
export function parseAdmissionReview(body: unknown): ParsedReview {
  if (!isRecord(body)) return { ok: false, message: 'expected an AdmissionReview object' };
  if (body.apiVersion !== ADMISSION_API_VERSION || body.kind !== 'AdmissionReview') {
    return { ok: false, message: `expected apiVersion ${ADMISSION_API_VERSION}, kind AdmissionReview (only v1 is served)` };
  }
  const r = body.request;
  if (!isRecord(r)) return { ok: false, message: 'request: expected an object' };
  if (!str(r.uid) || r.uid === '' || r.uid.length > MAX_UID) return { ok: false, message: 'request.uid: expected a non-empty string' };
  const kind = r.kind;
  if (!isRecord(kind) || !str(kind.group) || !str(kind.version) || !str(kind.kind)) return { ok: false, message: 'request.kind: expected group, version and kind' };
  const resource = r.resource;
  if (!isRecord(resource) || !str(resource.group) || !str(resource.version) || !str(resource.resource)) return { ok: false, message: 'request.resource: expected group, version and resource' };
  if (!str(r.operation) || !OPERATIONS.includes(r.operation)) return { ok: false, message: `request.operation: expected one of ${OPERATIONS.join(', ')}` };
  for (const field of ['subResource', 'namespace', 'name'] as const) {
    if (r[field] !== undefined && !str(r[field])) return { ok: false, message: `request.${field}: expected a string` };
  }
  const current = object(r.object);
  const old = object(r.oldObject);
  if (current === false) return { ok: false, message: 'request.object: expected an object with metadata' };
  if (old === false) return { ok: false, message: 'request.oldObject: expected an object with metadata' };
  return {
    ok: true,
    request: {
      uid: r.uid,
      kind: { group: kind.group, version: kind.version, kind: kind.kind },
      resource: { group: resource.group, version: resource.version, resource: resource.resource },
      ...(str(r.subResource) && r.subResource !== '' && { subResource: r.subResource }),
      ...(str(r.namespace) && r.namespace !== '' && { namespace: r.namespace }),
      ...(str(r.name) && r.name !== '' && { name: r.name }),
      operation: r.operation as Operation,
      ...(current && { object: current }),
      ...(old && { oldObject: old }),
    },
  };
}

/** Messages quote the submitted object's values: one line each, bounded, as kubectl shows them. */
const clip = (text: string, max: number) => {
  const line = printable(text);
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/** The AdmissionReview answer for one request: a refusal carries its reasons as a 403 status. */
export function admissionResponse(uid: string, verdict: Verdict): Record<string, unknown> {
  const warnings = (verdict.warnings ?? []).slice(0, MAX_WARNINGS).map((w) => clip(w, MAX_WARNING_LENGTH));
  return {
    apiVersion: ADMISSION_API_VERSION,
    kind: 'AdmissionReview',
    response: {
      uid,
      allowed: verdict.allowed,
      ...(!verdict.allowed && { status: { code: 403, reason: 'Forbidden', message: clip(verdict.message ?? 'refused', MAX_MESSAGE_LENGTH) } }),
      ...(warnings.length > 0 && { warnings }),
    },
  };
}
