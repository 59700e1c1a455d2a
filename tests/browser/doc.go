// Package browser runs headless Chromium (the Debian package, driven by
// playwright-core from this folder's package-lock.json) against Go servers.
// The tests fail, never skip, when Chromium or node_modules are missing:
// install them with `apt-get install -y chromium` and
// `npm ci --prefix tests/browser`. Outside CI, TIO_SKIP_BROWSER=1 skips them
// knowingly.
package browser
