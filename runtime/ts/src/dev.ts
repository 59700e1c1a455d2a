// Development sessions (the transport-io protocol, version 0, §10.3
// WT_DEV_ONLY, WT_CERT_EXPIRED): a development server on loopback serves
// the SHA-256 of its short-lived certificate at
// /.well-known/transport-io-dev, and connectDev pins it, so a page needs no
// hash pasted in. Mirrors the Go runtime's devcert manifest and listener.

import { abandoned } from './connector.js';
import { TransportError } from './errors.js';
import type { ConnectContext, Connector, Opened } from './transport.js';
import { connectWebTransport } from './webtransport.js';

/** Where a development server serves its manifest: `{ sha256: [32 bytes], url, expiresAt }`. */
export const DevManifestPath = '/.well-known/transport-io-dev';
/** How long fetching the manifest from loopback may take, in ms. */
export const ManifestTimeoutMs = 2000;

export interface DevOptions {
  /** Passed on to connectWebTransport. */
  readonly connectTimeoutMs?: number;
  /** The wall clock the certificate's expiry is judged by, in ms since the epoch; default Date.now. */
  readonly now?: () => number;
}

/**
 * A connector for a development server at baseUrl (http:// or https://,
 * loopback only: 127.0.0.0/8, ::1 or localhost, else WT_DEV_ONLY). Each
 * open fetches the manifest, refuses an expired certificate with
 * WT_CERT_EXPIRED, then opens a WebTransport session at the manifest's URL
 * with the served hash pinned. A query on baseUrl (a token) replaces the
 * manifest URL's. No I/O until open.
 *
 * A browser trusts a development certificate for WebTransport only (by its
 * pinned hash), never for fetch over HTTPS: from a page, baseUrl is where
 * the manifest can be read, such as the page's own development server on
 * http://127.0.0.1 relaying it.
 */
export function connectDev(baseUrl: string, options: DevOptions = {}): Connector {
  return { open: (ctx) => openDev(baseUrl, options, ctx) };
}

/** Whether a URL's hostname is loopback: 127.0.0.0/8, ::1 or localhost. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

interface Manifest {
  readonly sha256: Uint8Array<ArrayBuffer>;
  readonly url: string;
  readonly expiresAt: string;
  readonly expiresAtMs: number;
}

async function openDev(baseUrl: string, options: DevOptions, ctx: ConnectContext): Promise<Opened> {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new TransportError('WT_HANDSHAKE_FAILED', 'the development server URL does not parse');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new TransportError('WT_HANDSHAKE_FAILED', `the development server URL's scheme is ${base.protocol}; use https:// or http://`);
  }
  if (!isLoopbackHost(base.hostname)) {
    throw new TransportError(
      'WT_DEV_ONLY',
      `connectDev reaches development servers on loopback only, not ${base.hostname}: use 127.0.0.1 or ::1, or connectWebTransport with a real certificate`,
    );
  }
  const m = await fetchManifest(`${base.protocol}//${base.host}`, ctx);
  const session = new URL(m.url);
  if (session.protocol !== 'https:' || !isLoopbackHost(session.hostname)) {
    // Scheme, host and path of any scheme (a URL's origin names special schemes only), never the query.
    throw new TransportError('WT_DEV_ONLY', `the development manifest names a session URL off loopback (${session.protocol}//${session.host}${session.pathname})`);
  }
  const now = (options.now ?? Date.now)();
  if (m.expiresAtMs <= now) {
    throw new TransportError('WT_CERT_EXPIRED', `the development certificate of ${session.host} expired at ${m.expiresAt}`);
  }
  if (base.search !== '') session.search = base.search;
  const wt = connectWebTransport(session.href, {
    serverCertificateHashes: [{ algorithm: 'sha-256', value: m.sha256 }],
    ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
  });
  return wt.open(ctx);
}

async function fetchManifest(origin: string, ctx: ConnectContext): Promise<Manifest> {
  const where = origin + DevManifestPath;
  if (typeof globalThis.fetch !== 'function') throw new TransportError('WT_NO_SUPPORT', 'this runtime has no fetch to read the development manifest with');
  const ac = new AbortController();
  const onAbort = (): void => ac.abort();
  ctx.signal.addEventListener('abort', onAbort);
  const timer = ctx.clock.setTimeout(() => ac.abort(), ManifestTimeoutMs);
  let body: unknown;
  try {
    const rsp = await globalThis.fetch(where, { cache: 'no-store', credentials: 'omit', signal: ac.signal });
    if (rsp.status === 403) {
      throw new TransportError('WT_DEV_ONLY', `${where} is served to loopback peers only, and answered 403`);
    }
    if (!rsp.ok) {
      throw new TransportError('WT_HANDSHAKE_FAILED', `${where} answered HTTP ${rsp.status}: is the server running with a development certificate?`);
    }
    body = await rsp.json();
  } catch (err) {
    if (err instanceof TransportError) throw err;
    if (ctx.signal.aborted) throw abandoned();
    throw new TransportError(
      'WT_HANDSHAKE_FAILED',
      `could not read the development manifest at ${where} within ${ManifestTimeoutMs} ms: is the server running with a development certificate, and does this page trust it for HTTPS?`,
      { cause: err },
    );
  } finally {
    ctx.clock.clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
  }
  const m = parseManifest(body);
  if (m === undefined) throw new TransportError('WT_HANDSHAKE_FAILED', `the development manifest at ${where} is not { sha256: [32 bytes], url, expiresAt }`);
  return m;
}

function parseManifest(body: unknown): Manifest | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { sha256, url, expiresAt } = body as { sha256?: unknown; url?: unknown; expiresAt?: unknown };
  if (!Array.isArray(sha256) || sha256.length !== 32) return undefined;
  if (!sha256.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) return undefined;
  if (typeof url !== 'string' || typeof expiresAt !== 'string') return undefined;
  const expiresAtMs = Date.parse(expiresAt);
  if (Number.isNaN(expiresAtMs)) return undefined;
  try {
    new URL(url);
  } catch {
    return undefined;
  }
  return { sha256: new Uint8Array(sha256 as number[]), url, expiresAt, expiresAtMs };
}
