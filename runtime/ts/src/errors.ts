// The errors an application sees from the runtime: a WT_* code, what
// happened and what to do about it (§10). Mirrors the Go runtime's
// wire.Error.

import { type CodeName, codeNumber, remedy } from './codes.js';

/**
 * A stream the peer reset (RESET_STREAM) or stopped (STOP_SENDING), or that
 * this side abandoned, with its §10.1 code (§8). `code` is the byte as it
 * arrived, or undefined when the transport reported none (Firefox).
 */
export class StreamResetError extends Error {
  declare readonly code: number | undefined;
  declare readonly remote: boolean;

  constructor(code: number | undefined, remote: boolean, message?: string) {
    super(message ?? `reset by ${remote ? 'the peer' : 'this side'}, code ${code ?? '?'}`);
    this.code = code;
    this.remote = remote;
  }

  override name = 'StreamResetError';
}

/**
 * Removes the query of every URL in s ("scheme://...?q" becomes
 * "scheme://...?…"); a URL ends at white space or a quote. As the Go
 * runtime's redactQueries.
 */
export function redactQueries(s: string): string {
  return s.replace(/(:\/\/[^ \t\r\n"'`?]*)\?[^ \t\r\n"'`]*/g, '$1?…');
}

/**
 * The one error type of transport-io: `code` is the WT_* name, `number` the
 * §10.1/§10.2 number when the code has one, `remedy` the spec's advice.
 * Messages never carry URL query strings, which may hold credentials (§4.3).
 */
export class TransportError extends Error {
  // Fields the constructor sets are `declare`d: a plain declaration would be
  // emitted as a class field, defined as undefined and then set again.
  declare readonly code: CodeName;
  declare readonly number: number | undefined;
  declare readonly remedy: string;

  constructor(code: CodeName, message: string, options?: { cause?: unknown; remedy?: string }) {
    // Error reads only the cause from options, and owns one only when options has one.
    super(redactQueries(message), options);
    this.code = code;
    this.number = codeNumber(code);
    this.remedy = options?.remedy ?? remedy(code);
  }

  override name = 'TransportError';

  /** "WT_CODE: message (remedy)", as the Go runtime renders its errors. */
  override toString(): string {
    return this.code + (this.message && ': ' + this.message) + (this.remedy && ' (' + this.remedy + ')');
  }
}

/** A WT_PROTOCOL_ERROR: the peer broke a framing rule (§5.5, §10.2). */
export function protocolError(message: string): TransportError {
  return new TransportError('WT_PROTOCOL_ERROR', message);
}

/**
 * A refusal at the door (§4, §10.2 WT_UNAUTHORIZED, 1007): `reason` is the
 * application's short reason, whole ('bad-token', 'expired', 'refused'). A
 * client does not retry it.
 */
export class RefusedError extends TransportError {
  declare readonly reason: string;

  constructor(reason: string) {
    super('WT_UNAUTHORIZED', 'refused: ' + reason);
    this.reason = reason;
  }

  override name = 'RefusedError';
}
