// Runs scenarios of page/tio-test.js in the Debian Chromium and prints their
// results as one JSON line. Usage:
//   node run.mjs <page URL> '<JSON array of {name, url, sha256, args}>'
// The browser is the system's (CHROMIUM, default /usr/bin/chromium); nothing
// is downloaded.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [pageURL, scenariosJSON] = process.argv.slice(2);
if (!pageURL || !scenariosJSON) {
  console.error('usage: node run.mjs <page URL> <scenarios JSON>');
  process.exit(2);
}
const scenarios = JSON.parse(scenariosJSON);
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const profile = mkdtempSync(join(tmpdir(), 'tio-chromium-'));

// The flags known to work as root; playwright adds --headless and
// --no-sandbox, and the profile is a fresh directory.
const browser = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  args: [
    '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
try {
  const page = browser.pages()[0] || (await browser.newPage());
  const logs = [];
  page.on('console', (m) => logs.push(m.text()));
  page.on('pageerror', (e) => logs.push('pageerror: ' + e.message));
  await page.goto(pageURL);
  await page.waitForFunction(() => window.tioReady === true, null, { timeout: 10000 });
  const results = [];
  for (const s of scenarios) {
    let timer;
    const result = await Promise.race([
      page.evaluate(({ name, url, sha256, args }) => window.tio[name](url, sha256, ...(args || [])), s),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`scenario ${s.name} timed out; page log: ${JSON.stringify(logs)}`)), 20000);
      }),
    ]);
    clearTimeout(timer);
    results.push(result);
  }
  console.log(JSON.stringify({ userAgent: await page.evaluate(() => navigator.userAgent), results, logs }));
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
