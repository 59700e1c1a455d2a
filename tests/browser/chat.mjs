// Drives the chat example's web client in real browsers for chat_test.go:
// two Chromium pages (ann on WebTransport, bob forced onto the WebSocket
// mapping) and one Firefox ESR page (cat on WebTransport), in one room with
// the test's Go client (go). Usage:
//   node chat.mjs <page URL> <room> <screenshot dir>
// It prints JSON lines on stdout: {"step":"joined"} once every page is in
// the room (the test then makes the Go client speak), then
// {"result": {...}} with what each page showed. Every wait has a deadline
// and fails naming what did not happen. CHROMIUM and FIREFOX override the
// Debian packages' paths; nothing is downloaded.
import { chromium, firefox } from 'playwright-core';
import { join } from 'node:path';

const [pageURL, room, shotDir] = process.argv.slice(2);
if (!pageURL || !room || !shotDir) {
  console.error('usage: node chat.mjs <page URL> <room> <screenshot dir>');
  process.exit(2);
}

const viewport = { width: 640, height: 400 };
const say = (o) => console.log(JSON.stringify(o));

// Where each participant's pointer ends, as fractions of the board: the
// screenshot shows the dots there.
const participants = [
  { name: 'ann', browser: 'chromium', transport: 'webtransport', line: 'hello from Chromium', final: [0.28, 0.34] },
  { name: 'bob', browser: 'chromium', transport: 'websocket', line: 'bob joins over WebSocket', final: [0.62, 0.72] },
  { name: 'cat', browser: 'firefox', transport: 'webtransport', line: 'hello from Firefox', final: [0.74, 0.26] },
];
const goBefore = 'before you came';
const goAfter = 'go says hi to everyone';

async function until(what, fn, ms = 15000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const launched = await Promise.all([
  chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  }),
  // playwright-core 1.64.1 drives Debian's Firefox ESR through its
  // moz-firefox channel (WebDriver BiDi).
  firefox.launch({ channel: 'moz-firefox', executablePath: process.env.FIREFOX || '/usr/bin/firefox-esr', headless: true }),
]);
const [chromiumBrowser, firefoxBrowser] = launched;

try {
  const logs = [];
  for (const p of participants) {
    const b = p.browser === 'firefox' ? firefoxBrowser : chromiumBrowser;
    // A context each: separate pages, as two people's browsers are.
    const ctx = await b.newContext({ viewport });
    p.page = await ctx.newPage();
    p.page.on('console', (m) => logs.push(`${p.name}: ${m.text()}`));
    p.page.on('pageerror', (e) => logs.push(`${p.name}: pageerror: ${e.message}`));
    const q = new URLSearchParams({ room, name: p.name });
    if (p.transport === 'websocket') q.set('transport', 'websocket');
    await p.page.goto(`${pageURL}?${q}`);
  }
  const body = (p, key) => p.page.evaluate((k) => document.body.dataset[k] ?? '', key);
  const logOf = (p) =>
    p.page.evaluate(() =>
      [...document.querySelectorAll('#log li:not(.note)')].map((li) => ({
        from: li.querySelector('b')?.textContent ?? '',
        body: li.lastChild?.textContent ?? '',
        earlier: li.dataset.earlier === 'true',
      })),
    );
  const notesOf = (p) => p.page.evaluate(() => [...document.querySelectorAll('#log li.note')].map((li) => li.textContent));
  const send = async (p, line) => {
    await p.page.fill('#line', line);
    await p.page.press('#line', 'Enter');
  };
  const fail = (msg) => {
    throw new Error(`${msg}; page logs: ${JSON.stringify(logs)}`);
  };

  // Connected on the expected mapping; the WebTransport pages joined
  // through the history call and streamed the Go client's earlier line.
  for (const p of participants) {
    await until(`${p.name} to connect`, async () => (await body(p, 'status')) === 'connected').catch((e) => fail(e.message));
    p.mapping = await body(p, 'transport');
    if (p.mapping !== p.transport) fail(`${p.name} is on ${p.mapping}, want ${p.transport}`);
    if (p.transport === 'webtransport') {
      await until(`${p.name}'s history`, async () => (await body(p, 'history')) === 'done').catch((e) => fail(e.message));
      p.history = (await logOf(p)).filter((l) => l.earlier);
    }
  }
  // The WebSocket page joins by chatting (no calls there).
  const bob = participants[1];
  await send(bob, bob.line);
  for (const p of participants) {
    await until(`${p.name} to be in ${room}`, async () => (await body(p, 'joined')) === 'true').catch((e) => fail(e.message));
  }
  say({ step: 'joined' });

  for (const p of participants) if (p !== bob) await send(p, p.line);
  const expected = (p) => [
    ...participants.map((o) => ({ from: o.name, body: o.line })),
    { from: 'go', body: goAfter },
    ...(p.transport === 'webtransport' ? [{ from: 'go', body: goBefore }] : []),
  ];
  for (const p of participants) {
    await until(`every chat line on ${p.name}'s page`, async () => {
      const log = await logOf(p);
      return expected(p).every((e) => log.some((l) => l.from === e.from && l.body === e.body));
    }).catch(async (e) => fail(`${e.message}: it shows ${JSON.stringify(await logOf(p))}`));
  }

  // Cursors: each page moves its pointer over the board until every other
  // page has seen its dot move (datagrams may be lost: keep moving).
  const boardBox = async (p) => p.page.locator('#board').boundingBox();
  const moveTo = async (p, fx, fy) => {
    const b = await boardBox(p);
    await p.page.mouse.move(b.x + fx * b.width, b.y + fy * b.height, { steps: 3 });
  };
  const dotsOf = (p) =>
    p.page.evaluate(() =>
      Object.fromEntries(
        [...document.querySelectorAll('#board .dot')].map((d) => [
          d.dataset.from,
          { moves: Number(d.dataset.moves), left: parseFloat(d.style.left) / 100, top: parseFloat(d.style.top) / 100 },
        ]),
      ),
    );
  const allSeen = async (test) => {
    for (const p of participants) {
      const dots = await dotsOf(p);
      for (const o of participants) if (o !== p && !test(dots[o.name], o)) return false;
    }
    return true;
  };
  let round = 0;
  await until(
    'every page to see the others\' cursors move',
    async () => {
      round++;
      for (const [i, p] of participants.entries()) await moveTo(p, 0.1 + ((round * 0.17 + i * 0.3) % 0.8), 0.1 + ((round * 0.29 + i * 0.2) % 0.8));
      return allSeen((d) => d !== undefined && d.moves >= 2);
    },
    20000,
  ).catch(async (e) => fail(`${e.message}: ${JSON.stringify(await Promise.all(participants.map(dotsOf)))}`));

  // Then to where the screenshot shows them, nudged until every page shows
  // every other dot there.
  let nudge = 0;
  await until(
    'the cursors to settle',
    async () => {
      nudge = (nudge + 1) % 2;
      for (const p of participants) await moveTo(p, p.final[0] + nudge * 0.004, p.final[1]);
      for (const p of participants) await moveTo(p, p.final[0], p.final[1]);
      await new Promise((r) => setTimeout(r, 150));
      return allSeen((d, o) => d !== undefined && Math.abs(d.left - o.final[0]) < 0.01 && Math.abs(d.top - o.final[1]) < 0.01);
    },
    20000,
  ).catch(async (e) => fail(`${e.message}: ${JSON.stringify(await Promise.all(participants.map(dotsOf)))}`));

  // Save: a call, so WebTransport only; revisions count per room.
  const saved = {};
  for (const p of [participants[0], participants[2]]) {
    await p.page.click('#save');
    saved[p.name] = await until(`${p.name}'s save`, async () => {
      const t = await p.page.textContent('#saved');
      return t.startsWith('saved') || t.startsWith('not saved') ? t : '';
    }).catch((e) => fail(e.message));
  }
  saved.bobButtonDisabled = await bob.page.isDisabled('#save');

  // Move the pointers off the pages' own boards so no hover state shows,
  // then shoot ann (Chromium) and cat (Firefox).
  for (const p of participants) await p.page.mouse.move(5, 5);
  for (const p of [participants[0], participants[2]]) await p.page.screenshot({ path: join(shotDir, `${p.name}.png`) });

  const result = { saved, pages: {} };
  for (const p of participants) {
    result.pages[p.name] = {
      browser: await p.page.evaluate(() => navigator.userAgent),
      mapping: p.mapping,
      history: p.history ?? null,
      log: await logOf(p),
      notes: await notesOf(p),
      dots: await dotsOf(p),
    };
  }
  result.logs = logs;
  say({ result });
} finally {
  await Promise.all(launched.map((b) => b.close()));
}
