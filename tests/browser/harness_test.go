// Package browser runs headless Chromium and Firefox ESR (the Debian
// packages, driven by playwright-core from this folder's package-lock.json)
// against Go servers: raw pages speaking the protocol by hand, and the
// TypeScript runtime bundled from runtime/ts/src. The tests fail, never
// skip, when a browser, Node or node_modules are missing: `make deps`
// installs them (apt-get install -y chromium firefox-esr, npm ci in
// tests/browser and runtime/ts). Outside CI, TIO_SKIP_BROWSER=1 skips them
// knowingly.
package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/syncbuf"
	"github.com/transport-io/tiogen/runtime/devcert"
)

// A browser the tests drive: the Debian package at its default path, or
// where the environment variable says.
type browser struct {
	name    string // as run.mjs's TIO_BROWSER takes it
	env     string
	path    string
	pkg     string
	display string
}

var (
	chromium = browser{name: "chromium", env: "CHROMIUM", path: "/usr/bin/chromium", pkg: "chromium", display: "Chromium"}
	firefox  = browser{name: "firefox", env: "FIREFOX", path: "/usr/bin/firefox-esr", pkg: "firefox-esr", display: "Firefox ESR"}
)

func (b browser) executable() string {
	if p := os.Getenv(b.env); p != "" {
		return p
	}
	return b.path
}

// runtimeDir is the TypeScript runtime, bundled for the runtime's pages.
var runtimeDir = filepath.Join("..", "..", "runtime", "ts")

func esbuildPath() string { return filepath.Join(runtimeDir, "node_modules", ".bin", "esbuild") }

// requireBrowser fails the test loudly when the browser toolchain is missing.
func requireBrowser(t *testing.T, b browser) {
	t.Helper()
	if os.Getenv("TIO_SKIP_BROWSER") == "1" {
		if os.Getenv("CI") == "true" {
			t.Fatal("TIO_SKIP_BROWSER=1 is not honoured in CI: the browser tests must run there")
		}
		t.Skip("TIO_SKIP_BROWSER=1: browser tests skipped on request")
	}
	var missing []string
	if _, err := os.Stat(b.executable()); err != nil {
		missing = append(missing, fmt.Sprintf("%s (apt-get update && apt-get install -y %s, or set %s)", b.executable(), b.pkg, b.env))
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node (install Node.js 20 or later)")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "playwright-core", "package.json")); err != nil {
		missing = append(missing, "tests/browser/node_modules (npm ci --prefix tests/browser)")
	}
	if len(missing) > 0 {
		t.Fatalf("the headless %s tests cannot run; missing: %v (make deps installs them; or set TIO_SKIP_BROWSER=1 outside CI)", b.display, missing)
	}
}

// requireRuntimeBundler fails the test loudly when the runtime's dev
// dependencies (esbuild) are not installed.
func requireRuntimeBundler(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(esbuildPath()); err != nil {
		t.Fatalf("the runtime's pages cannot be bundled: %s is missing (npm ci --prefix runtime/ts, or make deps)", esbuildPath())
	}
}

// serveDir serves dir over plain HTTP on 127.0.0.1, a secure context for
// WebTransport with serverCertificateHashes, with the extra handlers a page
// may ask the test through, and returns the page's URL.
func serveDir(t *testing.T, dir string, extra map[string]http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(dir)))
	for path, h := range extra {
		mux.Handle(path, h)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/index.html"
}

// servePage serves the raw page (page/).
func servePage(t *testing.T) string { return serveDir(t, "page", nil) }

// bundlePage bundles entry, with the runtime sources it imports, into one
// ES module as esbuild does for an application, and serves it from an
// index.html, with serveDir's extra handlers.
func bundlePage(t *testing.T, entry string, extra map[string]http.Handler) string {
	t.Helper()
	return serveDir(t, bundleDir(t, entry), extra)
}

// bundleDir bundles entry as bundlePage does into a new directory holding
// index.html and page.js, and returns the directory.
func bundleDir(t *testing.T, entry string) string {
	t.Helper()
	requireRuntimeBundler(t)
	dir := t.TempDir()
	index := `<!doctype html><meta charset="utf-8"><title>tiogen runtime</title><script type="module" src="/page.js"></script>`
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(esbuildPath(), entry, "--bundle", "--format=esm", "--target=es2022", "--log-level=warning",
		"--outfile="+filepath.Join(dir, "page.js"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild %s: %v\n%s", entry, err, out)
	}
	return dir
}

type scenario struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	SHA256    []int  `json:"sha256"`
	Args      []any  `json:"args,omitempty"`
	TimeoutMs int    `json:"timeoutMs,omitempty"`
}

type runOutput struct {
	UserAgent string            `json:"userAgent"`
	LaunchMs  int               `json:"launchMs"`
	Results   []json.RawMessage `json:"results"`
	Logs      []string          `json:"logs"`
}

// runIn runs the scenarios in one launch of the browser, in one page, and
// returns their results.
func runIn(t *testing.T, b browser, pageURL string, scenarios []scenario, limit time.Duration) runOutput {
	t.Helper()
	arg, _ := json.Marshal(scenarios)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "run.mjs", pageURL, string(arg))
	cmd.Env = append(os.Environ(), "TIO_BROWSER="+b.name, b.env+"="+b.executable())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node run.mjs in %s: %v\nstderr:\n%s\nstdout:\n%s", b.display, err, stderr.String(), stdout.String())
	}
	var out runOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Results) != len(scenarios) {
		t.Fatalf("harness output %q: %v", stdout.String(), err)
	}
	t.Logf("%s, launched in %d ms", out.UserAgent, out.LaunchMs)
	return out
}

// runChromium runs the scenarios of the raw page in Chromium.
func runChromium(t *testing.T, scenarios []scenario) runOutput {
	t.Helper()
	return runIn(t, chromium, servePage(t), scenarios, 90*time.Second)
}

func pin(c *devcert.Cert) []int {
	b := make([]int, len(c.SHA256))
	for i, v := range c.SHA256 {
		b[i] = int(v)
	}
	return b
}

// The conformance server as a user runs it: cmd/tio-conformance built from
// this tree, once per test binary.
var (
	buildOnce   sync.Once
	builtServer string
	buildErr    error
	buildDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func conformanceBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "tio-conformance-")
		if buildErr != nil {
			return
		}
		builtServer = filepath.Join(buildDir, "tio-conformance")
		out, err := exec.Command("go", "build", "-o", builtServer, "github.com/transport-io/tiogen/cmd/tio-conformance").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/tio-conformance: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtServer
}

// conformanceServer is a running tio-conformance process.
type conformanceServer struct {
	URL        string `json:"url"`
	CertSHA256 string `json:"certSha256"`
	TCP        string `json:"tcp"`
	WS         string `json:"ws"`

	cmd      *exec.Cmd
	logs     *syncbuf.Buffer
	done     chan error
	stopOnce sync.Once
}

// startConformance runs tio-conformance on a free port with the given
// flags and waits for its readiness line. It is stopped (SIGTERM, which
// must exit 0) when the test ends.
func startConformance(t *testing.T, flags ...string) *conformanceServer {
	t.Helper()
	bin := conformanceBinary(t)
	cmd := exec.Command(bin, append([]string{"--addr", "127.0.0.1:0"}, flags...)...)
	s := &conformanceServer{cmd: cmd, logs: &syncbuf.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
		}
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() { s.stop(t) })
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("tio-conformance %v printed no readiness line; stderr:\n%s", flags, s.logs)
		}
		if err := json.Unmarshal([]byte(line), s); err != nil || s.TCP == "" {
			t.Fatalf("tio-conformance readiness line %q: %v", line, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("tio-conformance %v: no readiness line within 30 s; stderr:\n%s", flags, s.logs)
	}
	return s
}

func (s *conformanceServer) stop(t *testing.T) {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("tio-conformance after SIGTERM: %v; stderr:\n%s", err, s.logs)
			}
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
			t.Errorf("tio-conformance did not exit within 20 s of SIGTERM")
		}
	})
}

// loggedHandler answers a page's GET ?msg=...&has=... with 200 once the
// server logged a line with that message and fragment, 404 until then: how
// a page learns that the server saw what it did.
func (s *conformanceServer) loggedHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if s.logLine(q.Get("msg"), 0, q.Get("has")) == "" {
			http.NotFound(w, r)
		}
	})
}

// pin is the served certificate's SHA-256, as the page passes it to
// serverCertificateHashes.
func (s *conformanceServer) pin(t *testing.T) []int {
	t.Helper()
	b, err := hex.DecodeString(s.CertSHA256)
	if err != nil || len(b) != 32 {
		t.Fatalf("certSha256 %q", s.CertSHA256)
	}
	out := make([]int, len(b))
	for i, v := range b {
		out[i] = int(v)
	}
	return out
}

// logLine waits up to limit for the server's log line (slog text) with
// the given message and every one of the given fragments, and returns it,
// or "" when none came.
func (s *conformanceServer) logLine(msg string, limit time.Duration, fragments ...string) string {
	deadline := time.Now().Add(limit)
	for {
	lines:
		for _, line := range strings.Split(s.logs.String(), "\n") {
			if !strings.Contains(line, "msg="+strconv.Quote(msg)) {
				continue
			}
			for _, f := range fragments {
				if !strings.Contains(line, f) {
					continue lines
				}
			}
			return line
		}
		if time.Now().After(deadline) {
			return ""
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The runtime's pages type-check against the runtime's sources, so a change
// of its API fails here by name rather than as a scenario's odd result.
func TestRuntimePagesTypeCheck(t *testing.T) {
	requireRuntimeBundler(t)
	tsc := filepath.Join(runtimeDir, "node_modules", ".bin", "tsc")
	if out, err := exec.Command(tsc, "-p", filepath.Join("runtime", "tsconfig.json")).CombinedOutput(); err != nil {
		t.Fatalf("tsc -p runtime/tsconfig.json: %v\n%s", err, out)
	}
}
