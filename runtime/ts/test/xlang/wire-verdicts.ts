// The TypeScript half of tests/xlang's TestWireReadersAgreeAcrossLanguages:
// reads the cases the Go test wrote (argv[2]) through this runtime's wire
// readers and writes one verdict per case (argv[3]) in the form the Go test
// writes its own: what was read, in its canonical encoding, or the WT_*
// code of the refusal. A reader throwing anything but a TransportError is a
// verdict of its own ("crash"), so it can never pass for a refusal.

import { readFileSync, writeFileSync } from 'node:fs';

import { TransportError } from '../../src/errors.js';
import {
  FrameDecoder,
  compareTables,
  decodeHandshake,
  encodeCallError,
  encodeDatagram,
  encodeFrame,
  encodeHandshake,
  encodeRoom,
  negotiateFeatures,
  parseCallError,
  parseCredit,
  parseDatagram,
  parseRoom,
} from '../../src/wire/index.js';

interface WireCase {
  kind: string;
  hex: string[];
}

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const text = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');

/** The code of a refusal; anything thrown that is no TransportError is a crash. */
function refusal(e: unknown): string {
  if (e instanceof TransportError) return e.code;
  return `crash: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`;
}

/** Reads a stream pushed in chunks of size bytes (0: whole) to its end. */
function readFrames(b: Uint8Array, size: number): string {
  const d = new FrameDecoder();
  const out: string[] = [];
  try {
    for (let i = 0; i < b.length || i === 0; i += size || b.length || 1) {
      d.push(b.subarray(i, size ? i + size : b.length));
      for (let f = d.next(); f; f = d.next()) out.push(hex(encodeFrame(f.type, f.codec, f.eventId, f.payload)));
    }
  } catch (e) {
    return [...out, refusal(e)].join(' ');
  }
  return [...out, d.empty ? 'EOF' : 'UnexpectedEOF'].join(' ');
}

function verdict(c: WireCase): string {
  const [a = new Uint8Array(0), b = new Uint8Array(0)] = c.hex.map((h) => new Uint8Array(Buffer.from(h, 'hex')));
  try {
    switch (c.kind) {
      case 'frames': {
        const whole = readFrames(a, 0);
        const bytewise = readFrames(a, 1);
        return whole === bytewise ? whole : `chunking changed the verdict: whole ${whole}, byte at a time ${bytewise}`;
      }
      case 'datagram': {
        const d = parseDatagram(a);
        return d ? hex(encodeDatagram(d)) : 'discard';
      }
      case 'handshake':
        return text(encodeHandshake(decodeHandshake(a)));
      case 'credit':
        return String(parseCredit(a) ?? 'ignored');
      case 'room':
        return text(encodeRoom(parseRoom(a)));
      case 'callError':
        return text(encodeCallError(parseCallError(a)));
      case 'tables':
        try {
          compareTables(decodeHandshake(a).events, decodeHandshake(b).events);
        } catch (e) {
          return e instanceof TransportError ? `${e.code} ${e.message}` : refusal(e);
        }
        return 'ok';
      case 'features':
        return JSON.stringify(negotiateFeatures(decodeHandshake(a).feat, decodeHandshake(b).feat));
    }
  } catch (e) {
    return refusal(e);
  }
  throw new Error(`unknown kind ${c.kind}`);
}

const [input, output] = process.argv.slice(2);
if (!input || !output) throw new Error('usage: wire-verdicts.ts <cases.json> <verdicts.json>');
const cases = JSON.parse(readFileSync(input, 'utf8')) as WireCase[];
writeFileSync(output, JSON.stringify(cases.map(verdict)));
