// Runs scenarios of a test page in one headless browser, launched once for
// all of them, and prints their results as one JSON line. Usage:
//   node run.mjs <page URL> '<JSON array of {name, url, sha256, args, timeoutMs}>'
// A scenario is window.tio[name](url, sha256, ...args) on the page.
// TIO_BROWSER picks the browser: chromium (default; CHROMIUM, default
// /usr/bin/chromium) or firefox (FIREFOX, default /usr/bin/firefox-esr).
// The browsers are the system's Debian packages; nothing is downloaded.
// TIO_CPU_PROFILE=<dir> (Chromium): each scenario runs under the DevTools
// Protocol's sampling profiler, written to <dir>/<n>-<args>.cpuprofile with
// its result (.result.json) and the page's scripts (.src) beside them, for
// profile-summary.mjs.
import { chromium, firefox } from 'playwright-core';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [pageURL, scenariosJSON] = process.argv.slice(2);
if (!pageURL || !scenariosJSON) {
  console.error('usage: node run.mjs <page URL> <scenarios JSON>');
  process.exit(2);
}
const scenarios = JSON.parse(scenariosJSON);
const which = process.env.TIO_BROWSER || 'chromium';

async function launch() {
  if (which === 'firefox') {
    // playwright-core 1.64.1 drives Debian's Firefox ESR through its
    // moz-firefox channel (WebDriver BiDi).
    const browser = await firefox.launch({
      channel: 'moz-firefox',
      executablePath: process.env.FIREFOX || '/usr/bin/firefox-esr',
      headless: true,
    });
    const context = await browser.newContext();
    return { context, close: () => browser.close(), cleanup() {} };
  }
  if (which !== 'chromium') throw new Error(`TIO_BROWSER=${which}: want chromium or firefox`);
  // The flags known to work as root; playwright adds --headless and
  // --no-sandbox, and the profile is a fresh directory.
  const profile = mkdtempSync(join(tmpdir(), 'tio-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  return { context, close: () => context.close(), cleanup: () => rmSync(profile, { recursive: true, force: true }) };
}

const started = Date.now();
const browser = await launch();
const launchMs = Date.now() - started;
try {
  const page = browser.context.pages()[0] || (await browser.context.newPage());
  const logs = [];
  page.on('console', (m) => logs.push(m.text()));
  page.on('pageerror', (e) => logs.push('pageerror: ' + e.message));
  await page.goto(pageURL);
  await page.waitForFunction(() => window.tioReady === true, null, { timeout: 10000 });
  const profileDir = process.env.TIO_CPU_PROFILE;
  let cdp = null;
  if (profileDir) {
    if (which !== 'chromium') throw new Error('TIO_CPU_PROFILE needs Chromium (the DevTools Protocol profiler)');
    mkdirSync(profileDir, { recursive: true });
    cdp = await browser.context.newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 100 }); // µs
  }
  const scripts = new Set();
  const results = [];
  for (const [n, s] of scenarios.entries()) {
    if (cdp) await cdp.send('Profiler.start');
    let timer;
    const result = await Promise.race([
      page.evaluate(({ name, url, sha256, args }) => window.tio[name](url, sha256, ...(args || [])), s),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`scenario ${s.name} timed out; page log: ${JSON.stringify(logs)}`)), s.timeoutMs || 20000);
      }),
    ]).catch((e) => {
      // A scenario that throws fails its own check; the others still run.
      if (String(e.message).includes('timed out')) throw e;
      return { harnessError: String(e.message).split('\n')[0] };
    });
    clearTimeout(timer);
    results.push(result);
    if (cdp) {
      const { profile } = await cdp.send('Profiler.stop');
      for (const node of profile.nodes) if (node.callFrame.url.startsWith('http')) scripts.add(node.callFrame.url);
      const name = `${String(n).padStart(3, '0')}-${(s.args || []).join('-')}.cpuprofile`;
      writeFileSync(join(profileDir, name), JSON.stringify(profile));
      writeFileSync(join(profileDir, name.replace(/\.cpuprofile$/, '.result.json')), JSON.stringify(result));
    }
  }
  for (const url of scripts) {
    writeFileSync(join(profileDir, new URL(url).pathname.replace(/[^A-Za-z0-9.]+/g, '_') + '.src'), await (await fetch(url)).text());
  }
  console.log(JSON.stringify({ userAgent: await page.evaluate(() => navigator.userAgent), launchMs, results, logs }));
} finally {
  await browser.close();
  browser.cleanup();
}
