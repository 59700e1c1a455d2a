// Type tests of the generated chat client (testdata/golden/chat/ts), checked
// by test/generated.test.ts with tsc: each @ts-expect-error line must fail
// to compile, and does fail alone (the test also compiles this file with
// the directives removed and finds an error on exactly those lines).

import { connectWebTransport } from '@tiogen/runtime/webtransport';

import { MoodValues, chatContract, createChatClient, decodeMessage, encodeMessage, type Message, type Mood, type SaveResult } from '../cases/chat/chat.tio.js';

const chat = createChatClient({ connect: connectWebTransport('https://127.0.0.1:4433/tio'), reconnect: { minMs: 100, maxMs: 1000 } });
const m: Message = { room: 'r', body: 'b', tags: [], meta: {}, mood: 'happy' };

export async function allowed(signal: AbortSignal): Promise<void> {
  await chat.connect();
  chat.emitChat(m);
  chat.emitChat({ ...m, sentAt: 12n, replyTo: { ...m, mood: 'sad' } });
  const off: () => void = chat.onMessage((x: Message) => console.log(x.body, x.sentAt?.toString(), x.meta['k']?.length));
  off();
  chat.emitCursor({ x: 1, y: 2 });
  chat.onCursor((c) => console.log(c.x + c.y));
  const r: SaveResult = await chat.save({ doc: 'd', text: 't' }, { signal });
  console.log(r.revision.toFixed());
  for await (const h of chat.history({ room: 'r', limit: 10 }, { signal })) console.log(h.room);
  const u: SaveResult = await chat.upload(new Uint8Array([1]));
  console.log(u.revision);
  chat.onAvatar((b: Uint8Array) => console.log(b.byteLength));
  chat.emitPing('x');
  chat.onPing((s: string) => console.log(s.length));
  const unsubscribe: () => void = chat.subscribe(() => console.log(chat.getSnapshot().status, chat.stats().validationDropped));
  unsubscribe();
  const moods: readonly Mood[] = MoodValues;
  console.log(moods, chatContract.events.length, chat.client.getSnapshot().rooms);
  const again: string = encodeMessage(decodeMessage(JSON.parse('{}') as unknown));
  console.log(again);
  await chat.close('WT_NO_ERROR', 'bye');
}

export async function refused(): Promise<void> {
  // @ts-expect-error message is sent by the server only: the client has no emitMessage
  chat.emitMessage(m);
  // @ts-expect-error chat is sent by the client only: the client has no onChat
  chat.onChat(() => {});
  // @ts-expect-error a wrong payload type: a Cursor is not a Message
  chat.emitChat({ x: 1, y: 2 });
  // @ts-expect-error a wrong field type: int64 fields are bigint
  chat.emitChat({ ...m, sentAt: 12 });
  // @ts-expect-error a value outside the enum
  chat.emitChat({ ...m, mood: 'glad' });
  // @ts-expect-error a missing required field (room)
  chat.emitChat({ body: 'b', tags: [], meta: {}, mood: 'happy' });
  // @ts-expect-error an emit returns void: it cannot be awaited as a promise
  const sent: Promise<void> = chat.emitChat(m);
  // @ts-expect-error a returns call is a promise, not an async iterable
  for await (const x of chat.save({ doc: 'd', text: 't' })) console.log(x);
  // @ts-expect-error a yields call is an async iterable, not a promise of its result
  const h: Message = await chat.history({ room: 'r', limit: 1 });
  // @ts-expect-error optional fields take no explicit undefined (exactOptionalPropertyTypes)
  chat.emitChat({ ...m, sentAt: undefined });
  // @ts-expect-error a bytes() slot takes a Uint8Array
  await chat.upload('bytes');
  console.log(sent, h);
}
