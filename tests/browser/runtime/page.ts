// What the pages of the runtime's browser tests share: how a page hands its
// scenarios to run.mjs, which calls window.tio[name](url, sha256, ...args)
// once window.tioReady is set, and what a scenario reports of an error, as
// the Go tests read it (pageError in runtime_test.go).

import { RefusedError, TransportError } from '../../../runtime/ts/src/index.js';

declare global {
  interface Window {
    tio: Record<string, (...args: never[]) => Promise<unknown>>;
    tioReady: boolean;
  }
}

/** Makes scenarios the page's, and tells run.mjs the page is ready. */
export function serve(scenarios: object): void {
  window.tio = scenarios as Window['tio'];
  window.tioReady = true;
}

/** Whatever a promise rejected with (or a call threw), as the Go test checks it. */
export function describe(e: unknown) {
  if (e instanceof TransportError) {
    return {
      transportError: true,
      refused: e instanceof RefusedError,
      name: e.name,
      code: e.code,
      number: e.number ?? null,
      message: e.message,
      remedy: e.remedy,
      reason: e instanceof RefusedError ? e.reason : null,
    };
  }
  const err = e as { name?: string; message?: string };
  return { transportError: false, name: err?.name ?? typeof e, message: String(err?.message ?? e) };
}
