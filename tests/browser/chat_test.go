package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/syncbuf"
)

// The chat example's web client against its server, as a user runs them:
// `go run ./examples/chat/server` (built from this tree, serving the
// committed bundle) and the Go client, with two Chromium pages, one on
// WebTransport and one forced onto the WebSocket mapping (§3.3, cursors
// there as `fallback newest` DATAGRAM frames, §7.6), and one Firefox ESR
// page on WebTransport, all in one room. TIO_UPDATE_SCREENSHOT=1 writes
// the pages side by side to docs/chat-browsers.png.
func TestSpec2_Spec3_3_Spec7_6_ChatExampleInBrowsers(t *testing.T) {
	requireBrowser(t, chromium)
	requireBrowser(t, firefox)
	bin := t.TempDir()
	for _, cmd := range []string{"server", "client"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, cmd), "github.com/transport-io/tiogen/examples/chat/"+cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("go build ./examples/chat/%s: %v\n%s", cmd, err, out)
		}
	}
	const room = "lobby"

	server := startProcess(t, "chat server", filepath.Join(bin, "server"), "-addr", "127.0.0.1:0", "-http", "127.0.0.1:0", "-cert-dir", t.TempDir())
	sessionURL := server.waitFor(t, regexp.MustCompile(`^chat server on (https://\S+)$`))[1]
	pageURL := server.waitFor(t, regexp.MustCompile(`^web client on (http://127\.0\.0\.1:\d+/) `))[1]

	goClient := startProcess(t, "chat client", filepath.Join(bin, "client"), "-url", sessionURL, "-name", "go", "-room", room)
	goClient.waitFor(t, regexp.MustCompile(`^joined lobby as go`))
	goClient.say(t, "before you came")
	// The pages stream it as history only once the server holds it: a
	// second Go client's history says when (an emit is not answered).
	for attempt := 1; ; attempt++ {
		probe := startProcess(t, "history probe", filepath.Join(bin, "client"), "-url", sessionURL, "-name", "probe", "-room", room)
		probe.waitFor(t, regexp.MustCompile(`^joined lobby as probe`))
		probe.leave(t)
		if slices.Contains(probe.seen, "(earlier) go: before you came") {
			break
		}
		if attempt == 10 {
			t.Fatalf("the server never held the Go client's line; the probe's history: %q", probe.seen)
		}
	}

	shots := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "chat.mjs", pageURL, room, shots)
	node.Env = append(os.Environ(), chromium.env+"="+chromium.executable(), firefox.env+"="+firefox.executable())
	var stderr syncbuf.Buffer
	node.Stderr = &stderr
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	var result chatResult
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Step   string      `json:"step"`
			Result *chatResult `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Errorf("chat.mjs printed %q: %v", sc.Text(), err)
			continue
		}
		switch {
		case line.Step == "joined":
			// Every page is in the room: the Go client's line now reaches
			// all of them live, the WebSocket page included.
			goClient.say(t, "go says hi to everyone")
		case line.Result != nil:
			result = *line.Result
		}
	}
	if err := node.Wait(); err != nil {
		t.Fatalf("node chat.mjs: %v\nstderr:\n%s", err, stderr.String())
	}

	for name, p := range result.Pages {
		t.Logf("%s: %s on %s", name, p.Browser, p.Mapping)
	}
	checkChatPages(t, result)

	// The Go client saw every page's line.
	for _, want := range []string{"bob: bob joins over WebSocket", "ann: hello from Chromium", "cat: hello from Firefox"} {
		goClient.waitFor(t, regexp.MustCompile(`^`+regexp.QuoteMeta(want)+`$`))
	}
	goClient.leave(t)
	server.interrupt(t)

	out := filepath.Join(shots, "side-by-side.png")
	if os.Getenv("TIO_UPDATE_SCREENSHOT") == "1" {
		out = filepath.Join("..", "..", "docs", "chat-browsers.png")
	}
	if err := sideBySide(out, filepath.Join(shots, "ann.png"), filepath.Join(shots, "cat.png")); err != nil {
		t.Fatal(err)
	}
}

type chatResult struct {
	Saved struct {
		Ann               string `json:"ann"`
		Cat               string `json:"cat"`
		BobButtonDisabled bool   `json:"bobButtonDisabled"`
	} `json:"saved"`
	Pages map[string]chatPage `json:"pages"`
	Logs  []string            `json:"logs"`
}

type chatLine struct {
	From    string `json:"from"`
	Body    string `json:"body"`
	Earlier bool   `json:"earlier"`
}

type chatPage struct {
	Browser string     `json:"browser"`
	Mapping string     `json:"mapping"`
	History []chatLine `json:"history"`
	Log     []chatLine `json:"log"`
	Notes   []string   `json:"notes"`
	Dots    map[string]struct {
		Moves int     `json:"moves"`
		Left  float64 `json:"left"`
		Top   float64 `json:"top"`
	} `json:"dots"`
}

// checkChatPages checks what chat.mjs waited for, from what the pages
// showed at the end, so a change of the driver cannot loosen it unseen.
func checkChatPages(t *testing.T, r chatResult) {
	t.Helper()
	lines := map[string]string{"ann": "hello from Chromium", "bob": "bob joins over WebSocket", "cat": "hello from Firefox"}
	browsers := map[string]string{"ann": "Chrome/", "bob": "Chrome/", "cat": "Firefox/"}
	mappings := map[string]string{"ann": "webtransport", "bob": "websocket", "cat": "webtransport"}
	if len(r.Pages) != 3 {
		t.Fatalf("%d pages reported, want ann, bob and cat; logs %v", len(r.Pages), r.Logs)
	}
	for name, p := range r.Pages {
		if !strings.Contains(p.Browser, browsers[name]) {
			t.Errorf("%s ran in %q, want %s", name, p.Browser, browsers[name])
		}
		if p.Mapping != mappings[name] {
			t.Errorf("%s is on %q, want %s", name, p.Mapping, mappings[name])
		}
		want := []chatLine{{From: "go", Body: "go says hi to everyone"}}
		for who, body := range lines {
			want = append(want, chatLine{From: who, Body: body})
		}
		if p.Mapping == "webtransport" {
			// History streams on join (the yields call).
			if !slices.Contains(p.History, chatLine{From: "go", Body: "before you came", Earlier: true}) {
				t.Errorf("%s's history is %v, want the Go client's earlier line", name, p.History)
			}
		} else if len(p.History) != 0 || !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "no history") }) {
			t.Errorf("%s on the WebSocket mapping: history %v, notes %v; want none, and the page saying so (no calls, §3.3)", name, p.History, p.Notes)
		}
		for _, w := range want {
			if !slices.ContainsFunc(p.Log, func(l chatLine) bool { return l.From == w.From && l.Body == w.Body }) {
				t.Errorf("%s never showed %s: %q; it shows %v", name, w.From, w.Body, p.Log)
			}
		}
		for other := range lines {
			if other == name {
				if _, ok := p.Dots[name]; ok {
					t.Errorf("%s shows a dot for itself", name)
				}
				continue
			}
			if d, ok := p.Dots[other]; !ok || d.Moves < 2 {
				t.Errorf("%s saw %s's cursor move %d times, want at least 2", name, other, d.Moves)
			}
		}
	}
	if r.Saved.Ann != "saved revision 1" || r.Saved.Cat != "saved revision 2" {
		t.Errorf("saves answered %q and %q, want revisions 1 and 2 of the room", r.Saved.Ann, r.Saved.Cat)
	}
	if !r.Saved.BobButtonDisabled {
		t.Error("the WebSocket page offers save, a call the mapping cannot carry (§3.3)")
	}
}

// sideBySide writes the two screenshots next to each other, on a thin
// gutter, as one PNG.
func sideBySide(out, left, right string) error {
	var imgs []image.Image
	for _, f := range []string{left, right} {
		r, err := os.Open(f)
		if err != nil {
			return err
		}
		img, err := png.Decode(r)
		r.Close()
		if err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
		imgs = append(imgs, img)
	}
	const gutter = 8
	a, b := imgs[0].Bounds(), imgs[1].Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, a.Dx()+gutter+b.Dx(), max(a.Dy(), b.Dy())))
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.RGBA{0x9c, 0xa3, 0xaf, 0xff}), image.Point{}, draw.Src)
	draw.Draw(dst, image.Rect(0, 0, a.Dx(), a.Dy()), imgs[0], a.Min, draw.Src)
	draw.Draw(dst, image.Rect(a.Dx()+gutter, 0, a.Dx()+gutter+b.Dx(), b.Dy()), imgs[1], b.Min, draw.Src)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(f, dst); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// process is a command of the example, its stdout read line by line.
type process struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	seen  []string
	logs  *syncbuf.Buffer
	done  chan error
	ended bool // exit saw it end
}

func startProcess(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), lines: make(chan string, 256), logs: &syncbuf.Buffer{}, done: make(chan error, 1)}
	p.cmd.Stderr = p.logs
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if !p.ended {
			_ = p.cmd.Process.Kill()
			for range p.lines {
			}
			<-p.done
		}
	})
	return p
}

// waitFor returns the submatches of the first line (seen before or
// arriving within 20 s) that re matches.
func (p *process) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	for _, l := range p.seen {
		if m := re.FindStringSubmatch(l); m != nil {
			return m
		}
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s exited before printing a line matching %s; it printed %q; stderr:\n%s", p.name, re, p.seen, p.logs)
			}
			p.seen = append(p.seen, l)
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-deadline:
			t.Fatalf("%s printed no line matching %s within 20 s; it printed %q; stderr:\n%s", p.name, re, p.seen, p.logs)
		}
	}
}

func (p *process) say(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatalf("%s stdin: %v", p.name, err)
	}
}

// leave closes stdin, which ends the Go client; it must exit 0.
func (p *process) leave(t *testing.T) {
	t.Helper()
	_ = p.stdin.Close()
	p.exit(t)
}

// interrupt sends SIGINT (Ctrl-C), which shuts the server down; it must
// exit 0.
func (p *process) interrupt(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	p.exit(t)
}

func (p *process) exit(t *testing.T) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if ok {
				p.seen = append(p.seen, l)
				continue
			}
			p.ended = true
			if err := <-p.done; err != nil {
				t.Errorf("%s exited with %v; stderr:\n%s", p.name, err, p.logs)
			}
			return
		case <-timeout:
			t.Fatalf("%s did not exit within 20 s", p.name)
		}
	}
}

// The web client type-checks with the runtime's strict flags against the
// runtime's sources and the generated client.
func TestChatWebTypeChecks(t *testing.T) {
	requireRuntimeBundler(t)
	tsc := filepath.Join(runtimeDir, "node_modules", ".bin", "tsc")
	if out, err := exec.Command(tsc, "-p", filepath.Join("..", "..", "examples", "chat", "web", "tsconfig.json")).CombinedOutput(); err != nil {
		t.Fatalf("tsc -p examples/chat/web/tsconfig.json: %v\n%s", err, out)
	}
}
