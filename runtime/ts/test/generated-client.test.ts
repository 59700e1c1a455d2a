// The generated chat client (testdata/golden/chat/ts) against the runtime:
// typed emits, subscriptions, calls and streams over the in-memory pair
// with a scripted server, which sees and sends exactly the bytes on the
// wire. The cross-language fixtures run through the generated decoders in
// fixtures.test.ts.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { ResetCode, TransportError, type Connector, type Contract, type Stats } from '../src/index.js';
import { FakeClock, memoryConnector, settle, type ScriptedServer } from '../src/testing.js';
import { FrameEmit, CodecJson } from '../src/wire/frame.js';
import { parseDatagram } from '../src/wire/datagram.js';
import { utf8Decode, utf8Encode } from '../src/wire/utf8.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const goldens = join(root, '..', '..', 'testdata', 'golden');

// The generated files import '@tiogen/runtime'; here it resolves to this
// runtime's src/ (the same modules this test imports, so instanceof holds).
let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'tio-generated-client-'));
  const pkg = join(dir, 'node_modules', '@tiogen', 'runtime');
  mkdirSync(pkg, { recursive: true });
  symlinkSync(join(root, 'src'), join(pkg, 'src'));
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: '@tiogen/runtime', type: 'module', exports: { '.': './src/index.ts' } }));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
});
after(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

/** Imports a golden case's generated file. */
async function generated(c: string): Promise<Record<string, unknown>> {
  const tsDir = join(goldens, c, 'ts');
  const file = readdirSync(tsDir)[0] as string;
  mkdirSync(join(dir, c), { recursive: true });
  copyFileSync(join(tsDir, file), join(dir, c, file));
  return (await import(pathToFileURL(join(dir, c, file)).href)) as Record<string, unknown>;
}

// What this test uses of the generated module (the file itself is compiled
// with the goldens by generated.test.ts; the tree's tsconfig cannot resolve
// its '@tiogen/runtime' import from testdata/).
interface Message {
  room: string;
  body: string;
  sentAt?: bigint;
  tags: string[];
  meta: Record<string, string>;
  mood: 'happy' | 'sad' | 'angry';
  replyTo?: Message;
}
interface Chat {
  chatContract: Contract;
  createChatClient(o: { connect: Connector; clock?: FakeClock }): {
    connect(): Promise<void>;
    close(): Promise<void>;
    emitChat(m: Message): void;
    emitPing(s: string): void;
    emitCursor(c: { x: number; y: number }): void;
    onCursor(h: (c: { x: number; y: number }) => void): () => void;
    onMessage(h: (m: Message) => void): () => void;
    save(r: { doc: string; text: string }): Promise<{ revision: number }>;
    upload(b: Uint8Array): Promise<{ revision: number }>;
    history(r: { room: string; limit: number }): AsyncIterable<Message>;
    stats(): Stats;
  };
}

/** A generated chat client, connected to a scripted server. */
async function connected() {
  const chat = (await generated('chat')) as unknown as Chat;
  let server: ScriptedServer | undefined;
  const connector = memoryConnector(chat.chatContract, async (s) => {
    server = s;
    await s.establish();
  });
  const client = chat.createChatClient({ connect: connector, clock: new FakeClock() });
  await client.connect();
  assert.ok(server !== undefined);
  return { client, server, pair: connector.pairs[0]! };
}

const message = { room: 'lobby', body: 'hi', sentAt: 9007199254740993n, tags: ['a'], meta: { b: '2', a: '1' }, mood: 'happy' as const };
const wire = '{"room":"lobby","body":"hi","sentAt":"9007199254740993","tags":["a"],"meta":{"a":"1","b":"2"},"mood":"happy"}';

test('§6.1 a typed emit sends the canonical JSON: int64 as a decimal string, map keys sorted', async () => {
  const { client, server } = await connected();
  client.emitChat(message);
  client.emitPing('x');
  const f = await server.nextFrame();
  assert.ok(f !== null && f.type === FrameEmit && f.codec === CodecJson);
  assert.equal(utf8Decode(f.payload), wire);
  const p = await server.nextFrame();
  assert.equal(utf8Decode(p!.payload), '"x"');
  await client.close();
});

test('§6.1 a value its type refuses is not sent: WT_VALIDATION_FAILED naming the field', async () => {
  const { client, server } = await connected();
  const bad = { ...message, replyTo: { ...message, mood: 'glad' } } as unknown as Parameters<typeof client.emitChat>[0];
  assert.throws(
    () => client.emitChat(bad),
    (e: unknown) => e instanceof TransportError && e.code === 'WT_VALIDATION_FAILED' && e.message.includes("field 'replyTo.mood' must be one of 'happy', 'sad', 'angry'"),
  );
  const tooBig = { ...message, sentAt: 1n << 63n };
  assert.throws(() => client.emitChat(tooBig), /field 'sentAt' must be an integer from -9223372036854775808 to 9223372036854775807/);
  client.emitPing('after');
  assert.equal(utf8Decode((await server.nextFrame())!.payload), '"after"', 'nothing was sent before');
  await client.close();
});

test('§6.1 a typed subscription gets decoded values (bigint from a decimal string); a bad payload is dropped and counted', async () => {
  const got: unknown[] = [];
  const { client, server } = await connected();
  client.onMessage((m) => got.push(m));
  const s = server;
  await s.sendFrame(FrameEmit, CodecJson, s.contract.byName.get('message')!.id, utf8Encode('{"room":"r","body":1,"tags":[],"meta":{},"mood":"sad"}'));
  await s.sendFrame(FrameEmit, CodecJson, s.contract.byName.get('message')!.id, utf8Encode('{"room":"r","body":"b","sentAt":"-12","tags":[],"meta":{"__proto__":"x"},"mood":"sad","extra":true}'));
  await settle(10);
  assert.equal(client.stats().validationDropped, 1);
  assert.equal(got.length, 1);
  const m = got[0] as { sentAt: bigint; meta: Record<string, string> };
  assert.equal(m.sentAt, -12n);
  assert.ok(Object.hasOwn(m.meta, '__proto__') && m.meta['__proto__'] === 'x', '__proto__ is an own key');
  assert.equal(Object.getPrototypeOf(m.meta), Object.prototype);
  assert.equal(Object.hasOwn(m, 'extra'), false, 'unknown keys are skipped');
  await client.close();
});

test('§7 a typed datagram: emitCursor sends the canonical JSON, onCursor gets decoded values, a bad one is dropped and counted', async () => {
  const { client, server, pair } = await connected();
  client.emitCursor({ x: 0.5, y: -0 });
  const sent = parseDatagram(pair.clientDatagrams[0]!);
  assert.ok(sent !== undefined);
  assert.equal(utf8Decode(sent.payload), '{"x":0.5,"y":0}');
  const got: Array<{ x: number; y: number }> = [];
  client.onCursor((c) => got.push(c));
  await server.sendDatagram(server.datagram('cursor', 7, 1, { x: 'left', y: 1 }));
  await server.sendDatagram(server.datagram('cursor', 7, 2, { x: 1e-7, y: 2 }));
  await settle(10);
  assert.deepEqual(got, [{ x: 1e-7, y: 2 }]);
  assert.equal(client.stats().validationDropped, 1);
  await client.close();
});

test('§3.2 a typed returns call resolves with the decoded result; one its type refuses rejects WT_VALIDATION_FAILED', async () => {
  const { client, server } = await connected();
  const r = client.save({ doc: 'd', text: 't' });
  const c = (await server.acceptCall())!;
  assert.equal(c.name, 'save');
  assert.equal(utf8Decode(c.request.payload), '{"doc":"d","text":"t"}');
  await c.respond({ revision: 7 });
  await c.end();
  assert.deepEqual(await r, { revision: 7 });
  const bad = client.save({ doc: 'd', text: 't' });
  const c2 = (await server.acceptCall())!;
  await c2.respond({ revision: 2.5 });
  await c2.end();
  await assert.rejects(bad, (e: unknown) => e instanceof TransportError && e.code === 'WT_VALIDATION_FAILED' && e.message.includes("field 'revision' must be an integer from -2147483648 to 2147483647"));
  const up = client.upload(new Uint8Array([1, 2]));
  const c3 = (await server.acceptCall())!;
  assert.deepEqual([...c3.request.payload], [1, 2]);
  await c3.respond({ revision: 1 });
  await c3.end();
  assert.deepEqual(await up, { revision: 1 });
  await client.close();
});

test('§3.2 §8 a typed yields call is an async iterable of decoded elements; break cancels it', async () => {
  const { client, server } = await connected();
  const seen: string[] = [];
  const loop = (async () => {
    for await (const m of client.history({ room: 'r', limit: 3 })) {
      seen.push(m.body);
      if (seen.length === 2) break;
    }
  })();
  const c = (await server.acceptCall())!;
  assert.equal(utf8Decode(c.request.payload), '{"room":"r","limit":3}');
  for (const body of ['one', 'two', 'three']) await c.respond({ room: 'r', body, tags: [], meta: {}, mood: 'happy' });
  await loop;
  assert.deepEqual(seen, ['one', 'two']);
  await settle(10);
  assert.equal(c.clientReset, ResetCode.WT_ABORTED, 'the break reset the stream WT_ABORTED');
  await client.close();
});
