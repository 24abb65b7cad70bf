import type { MapEntry } from './map-file.ts';
import type { ServerState } from './plan-server-options.ts';

export type { ServerState };

/** A server of a backend (or listen section), by name. */
export interface ServerRef {
  backend: string;
  server: string;
}

/**
 * Creates a server (in maintenance), enables its checks, then brings it to
 * `state`. One difference from a fresh start remains: a server added in
 * maintenance runs its health checks, where a fresh start pauses them until
 * the server leaves maintenance.
 */
export interface ServerAddOp extends ServerRef {
  kind: 'server-add';
  /** The address exactly as the configuration writes it. */
  address: string;
  /** The effective settings, weight included, as words for `add server`. */
  args: string[];
  state: ServerState;
  /** `check` is set: health checks start disabled on added servers and must be enabled. */
  health: boolean;
  /** `agent-check` is set: likewise for the agent. */
  agent: boolean;
}

export interface ServerAddrOp extends ServerRef {
  kind: 'server-addr';
  /** IP literal, without brackets. */
  host: string;
  port: number;
}

export interface ServerWeightOp extends ServerRef {
  kind: 'server-weight';
  weight: number;
}

export interface ServerStateOp extends ServerRef {
  kind: 'server-state';
  state: ServerState;
}

/** Puts the server in maintenance, then deletes it; haproxy refuses while connections remain. */
export interface ServerDelOp extends ServerRef {
  kind: 'server-del';
  /** The agent must be stopped first, or it may bring the server back out of maintenance. */
  agent: boolean;
  /**
   * The server's settings other than state and weight, as `add server` words (see
   * ServerAddOp.args); undefined when they could not be read. A server whose deletion
   * waits for its connections can be taken back into rotation by a later add with the
   * same settings, instead of being added again.
   */
  settings?: string[];
}

/**
 * A map as the running haproxy knows it: `map` is the file name in
 * RenderedConfig.maps, `ref` is the name haproxy gives it, which is the path
 * exactly as the configuration spells it (e.g. `maps/hosts.map`).
 */
export interface MapRef {
  map: string;
  ref: string;
}

export interface MapAddOp extends MapRef {
  kind: 'map-add';
  key: string;
  value: string;
}

export interface MapSetOp extends MapRef {
  kind: 'map-set';
  key: string;
  value: string;
}

export interface MapDelOp extends MapRef {
  kind: 'map-del';
  key: string;
}

/** Replaces every entry at once, keeping file order (prepare / add @version / commit). */
export interface MapReplaceOp extends MapRef {
  kind: 'map-replace';
  entries: MapEntry[];
}

/**
 * Replaces a certificate haproxy has loaded (a certificate with its key, as one PEM
 * file) in one transaction (`set ssl cert`, `commit ssl cert`): every bind and server
 * that uses it takes the new one for new connections.
 */
export interface CertSetOp {
  kind: 'cert-set';
  /** The file name in RenderedConfig.certs. */
  cert: string;
  /** The path as the configuration spells it (e.g. `ssl/site.pem`): haproxy's name for it. */
  ref: string;
  content: string;
}

/** Loads a certificate haproxy has not loaded yet (`new ssl cert`, then as CertSetOp), for a crt-list line to name. */
export interface CertNewOp {
  kind: 'cert-new';
  cert: string;
  ref: string;
  content: string;
}

/** Appends a line to a crt-list a bind line loads (`add ssl crt-list`); its certificate is loaded already. */
export interface CrtListAddOp {
  kind: 'crt-list-add';
  /** The crt-list's file name in RenderedConfig.certs, and its path as the configuration spells it. */
  list: string;
  listRef: string;
  /** The file name of the line's certificate. */
  cert: string;
  /** The line: the certificate's path, then its SNI filters. */
  entry: string;
}

/** Removes the one line of a certificate from a crt-list (`del ssl crt-list`). */
export interface CrtListDelOp {
  kind: 'crt-list-del';
  list: string;
  listRef: string;
  cert: string;
  /** The certificate's path as the line spells it. */
  certRef: string;
  /**
   * The old line's text, when the certificate's line was edited: the new line is in by
   * then, so haproxy needs the old one's number (`show ssl crt-list -n`).
   */
  entry?: string;
}

/** Unloads a certificate nothing uses any more (`del ssl cert`). */
export interface CertDelOp {
  kind: 'cert-del';
  cert: string;
  ref: string;
}

export type RuntimeOp =
  | CertSetOp
  | CertNewOp
  | CrtListAddOp
  | CrtListDelOp
  | CertDelOp
  | ServerAddOp
  | ServerAddrOp
  | ServerWeightOp
  | ServerStateOp
  | ServerDelOp
  | MapAddOp
  | MapSetOp
  | MapDelOp
  | MapReplaceOp;

export type Plan =
  | { kind: 'none' }
  | { kind: 'runtime'; ops: RuntimeOp[] }
  | {
      kind: 'reload';
      reasons: string[];
      /**
       * What the configuration cannot say by itself and must be applied to the
       * new process once it runs: servers marked for draining.
       */
      after: RuntimeOp[];
    };
