// The chat example's page: the room's lines, a dot per participant moving
// with their pointer, the room's history on join, and save — written
// against the client tiogen generates from examples/chat/chat.tio.
//
// It connects as a development page does: connectDev reads the server's
// certificate pin from this page's own origin (the example server relays
// its manifest there), and the WebSocket mapping on the same origin is the
// fallback. ?transport=websocket uses the WebSocket mapping alone; ?room=
// and ?name= choose the room and the name.

import { createChatClient, type Cursor, type Message } from './chat.tio.js';
import { connectDev } from '@tiogen/runtime/dev';
import { connectWebSocket } from '@tiogen/runtime/websocket';
import { withFallback } from '@tiogen/runtime/fallback';

/** The contract's path on the server (examples/chat/server). */
const chatPath = '/chat';
const historyLimit = 50;

const params = new URLSearchParams(location.search);
const room = params.get('room') || 'lobby';
const name = params.get('name') || `guest-${Math.floor(Math.random() * 9000) + 1000}`;
const webSocketOnly = params.get('transport') === 'websocket';

function element<T extends HTMLElement>(id: string, type: new () => T): T {
  const el = document.getElementById(id);
  if (!(el instanceof type)) throw new Error(`the page has no #${id}`);
  return el;
}

const ui = {
  status: element('status', HTMLElement),
  who: element('who', HTMLElement),
  log: element('log', HTMLOListElement),
  board: element('board', HTMLElement),
  form: element('say', HTMLFormElement),
  line: element('line', HTMLInputElement),
  save: element('save', HTMLButtonElement),
  saved: element('saved', HTMLElement),
};

const wsUrl = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${chatPath}`;
const chat = createChatClient({
  connect: webSocketOnly ? connectWebSocket(wsUrl) : withFallback(connectDev(location.origin), connectWebSocket(wsUrl)),
  reconnect: { minMs: 500, maxMs: 10_000 },
});

// ---- chat lines ---------------------------------------------------------

const lines: string[] = [];

function show(m: Message, earlier: boolean): void {
  const from = m.meta['from'] ?? 'someone';
  const li = document.createElement('li');
  if (earlier) li.dataset['earlier'] = 'true';
  const time = document.createElement('time');
  if (m.sentAt !== undefined) {
    const at = new Date(Number(m.sentAt));
    time.dateTime = at.toISOString();
    time.textContent = at.toTimeString().slice(0, 5);
  }
  const who = document.createElement('b');
  who.textContent = from;
  who.style.color = colorOf(from);
  li.append(time, who, document.createTextNode(m.body));
  ui.log.append(li);
  li.scrollIntoView({ block: 'end' });
  lines.push(`${from}: ${m.body}`);
}

function note(text: string): void {
  const li = document.createElement('li');
  li.className = 'note';
  li.textContent = text;
  ui.log.append(li);
}

chat.onMessage((m) => {
  if (m.room === room) show(m, false);
});

ui.form.addEventListener('submit', (e) => {
  e.preventDefault();
  const body = ui.line.value.trim();
  if (body === '') return;
  const m: Message = { room, body, tags: [], meta: { from: name }, mood: 'happy' };
  try {
    chat.emitChat(m);
    ui.line.value = '';
    // The server sends a line to the room's other members: show ours here.
    show({ ...m, sentAt: BigInt(Date.now()) }, false);
  } catch (err) {
    note(`not sent: ${describe(err)}`);
  }
});

ui.save.addEventListener('click', () => {
  ui.save.disabled = true;
  chat
    .save({ doc: room, text: lines.join('\n') })
    .then((r) => (ui.saved.textContent = `saved revision ${r.revision}`))
    .catch((err: unknown) => (ui.saved.textContent = `not saved: ${describe(err)}`))
    .finally(() => (ui.save.disabled = !onWebTransport()));
});

// ---- cursors ------------------------------------------------------------

const dots = new Map<string, HTMLElement>();
// The contract has no presence: a dot that stopped moving fades, as its
// participant may have left.
const idleAfterMs = 10_000;
const lastMoved = new Map<string, number>();

chat.onCursor((c: Cursor) => {
  if (c.from === undefined || c.from === name) return;
  let dot = dots.get(c.from);
  if (dot === undefined) {
    dot = document.createElement('span');
    dot.className = 'dot';
    dot.dataset['from'] = c.from;
    dot.dataset['moves'] = '0';
    dot.textContent = c.from;
    dot.style.setProperty('--color', colorOf(c.from));
    ui.board.append(dot);
    dots.set(c.from, dot);
  }
  dot.style.left = `${clamp(c.x) * 100}%`;
  dot.style.top = `${clamp(c.y) * 100}%`;
  dot.dataset['moves'] = String(Number(dot.dataset['moves']) + 1);
  dot.classList.remove('idle');
  lastMoved.set(c.from, Date.now());
});

setInterval(() => {
  const now = Date.now();
  for (const [from, at] of lastMoved) if (now - at > idleAfterMs) dots.get(from)?.classList.add('idle');
}, 1000);

// One cursor datagram per animation frame at most: the newest position is
// the only one worth sending (and on the WebSocket mapping the only one
// the lane keeps, `fallback newest`).
let pending: Cursor | undefined;
ui.board.addEventListener('pointermove', (e) => {
  const r = ui.board.getBoundingClientRect();
  if (pending === undefined) requestAnimationFrame(sendCursor);
  pending = { x: clamp((e.clientX - r.left) / r.width), y: clamp((e.clientY - r.top) / r.height), from: name };
});

function sendCursor(): void {
  const c = pending;
  pending = undefined;
  if (c === undefined || chat.getSnapshot().status !== 'connected') return;
  try {
    chat.emitCursor(c);
  } catch {
    // An unreliable event: a position lost is replaced by the next.
  }
}

// ---- the session --------------------------------------------------------

function onWebTransport(): boolean {
  return chat.getSnapshot().transport === 'webtransport';
}

// Each session is new (nothing is resumed): join the room again on it.
let joinedSession = false;
chat.subscribe(() => {
  const s = chat.getSnapshot();
  const inRoom = s.rooms.includes(room);
  ui.status.textContent =
    s.status === 'connected' ? `${s.transport === 'webtransport' ? 'WebTransport' : 'WebSocket'}${inRoom ? ` · in ${room}` : ''}` : s.status;
  ui.status.title = s.fallbackReason ?? s.lastError?.message ?? '';
  document.body.dataset['status'] = s.status;
  document.body.dataset['transport'] = s.transport ?? '';
  document.body.dataset['joined'] = String(inRoom);
  ui.save.disabled = !(s.status === 'connected' && s.transport === 'webtransport');
  ui.save.title = s.transport === 'websocket' ? 'save is a call: calls need WebTransport' : '';
  if (s.status !== 'connected') joinedSession = false;
  else if (!joinedSession) {
    joinedSession = true;
    void join();
  }
});

// On WebTransport the history call joins the room and streams its past
// lines; the WebSocket mapping has no calls, so there the first line sent
// joins it.
async function join(): Promise<void> {
  if (!onWebTransport()) {
    note(`WebSocket mapping: no history here, and your first line joins ${room}`);
    return;
  }
  ui.log.replaceChildren();
  lines.length = 0;
  document.body.dataset['history'] = 'streaming';
  try {
    for await (const m of chat.history({ room, limit: historyLimit })) show(m, true);
    document.body.dataset['history'] = 'done';
  } catch (err) {
    note(`no history: ${describe(err)}`);
  }
}

ui.who.textContent = `${name} in ${room}`;
document.title = `${room} · tiogen chat`;
chat.connect().catch((err: unknown) => note(`not connected: ${describe(err)}`));

// ---- helpers ------------------------------------------------------------

function clamp(v: number): number {
  return Math.min(1, Math.max(0, v));
}

function colorOf(s: string): string {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) % 360;
  return `hsl(${h} 65% 42%)`;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
