package view

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"skyloop/internal/hostile"
	"skyloop/internal/untrusted"
)

// A small run: two vehicles and a ground station (node 2), 10 s.
var goodRun = map[string]string{
	"summary.json": `{"scenario":"tiny","seed":7,"duration_ns":10000000000,"nodes":3,"vehicles":[{"name":"uav-0"},{"name":"uav-1"}]}`,
	"config.json":  `{"world":{"obstacles":[{"name":"wall","min":[0,0,0],"max":[1,2,3]}]},"nodes":[{"name":"gcs","position":[5,5,0]}]}`,
	"vehicles.csv": "t_ns,id,x,y,z,vx,vy,vz,roll,pitch,yaw,mode,armed,energy_j,battery_v,current_a,pressure_pa\n" +
		"0,0,0,0,0,0,0,0,0,0,0,disarmed,0,0,12.6,0,101325\n" +
		"0,1,6,1,0,0,0,0,0,0,0,disarmed,0,0,12.6,0,101325\n" +
		"5000000000,0,1,2,3,1,0,0,0,0,0,goto,1,10,12.5,1,101300\n",
	"trace.csv": "event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason\n" +
		"tx,1000,0,-1,0,1000,60,telem,\n" +
		"rx,2000,0,2,0,1000,60,telem,\n" +
		"drop,2000,0,1,0,1000,60,telem,collision\n",
	"events.csv": "t_ns,node,source,event,detail\n" +
		"3000000,2,agent,command,\"leg=0, op=1\"\n" +
		"4000000,-1,run,note,\n",
}

// writeRun writes a run directory of goodRun with the files in change
// replacing its own (an empty string removes the file).
func writeRun(t *testing.T, change map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range goodRun {
		if c, ok := change[name]; ok {
			text = c
		}
		if text == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadReplayOfAGoodRun(t *testing.T) {
	r, err := LoadReplay(writeRun(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Names) != 2 || len(r.Fixed) != 1 || len(r.Obstacles) != 1 || len(r.Samples.T) != 3 || len(r.Net.T) != 3 || len(r.Events) != 2 ||
		r.Samples.Mode[2] != "goto" || !r.Samples.Armed[2] || r.Net.Node[0] != -1 || r.Events[0].Detail != "leg=0, op=1" || len(r.Missing) != 0 {
		t.Errorf("replay %+v", r)
	}
}

// TestLoadReplayRangeChecks: every id and number read back from a run
// directory is checked (on fc3ddb2 a src of 2^32 wrapped to
// -2147483648 in the page, and the others went through): the error names
// the file and line.
func TestLoadReplayRangeChecks(t *testing.T) {
	vh := "t_ns,id,x,y,z,vx,vy,vz,roll,pitch,yaw,mode,armed,energy_j,battery_v,current_a,pressure_pa\n"
	th := "event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason\n"
	eh := "t_ns,node,source,event,detail\n"
	cases := []struct {
		file, text, want string
	}{
		{"trace.csv", th + "tx,1000,0,-1,0,1000,60,telem,\nrx,2000,4294967296,2,0,1000,60,telem,\n", `trace.csv line 3: src "4294967296" is not a node of the run (0 to 2)`},
		{"trace.csv", th + "rx,2000,3,2,0,1000,60,telem,\n", `trace.csv line 2: src "3" is not a node`},
		{"trace.csv", th + "rx,2000,-1,2,0,1000,60,telem,\n", `trace.csv line 2: src "-1" is not a node`},
		{"trace.csv", th + "rx,2000,0,-1,0,1000,60,telem,\n", `trace.csv line 2: dst "-1" is not a node of the run (0 to 2)`},
		{"trace.csv", th + "tx,20000000000,0,1,0,1000,60,telem,\n", `trace.csv line 2: t_ns "20000000000" is not a time within the run`},
		{"trace.csv", th + "tx,-5,0,1,0,1000,60,telem,\n", `trace.csv line 2: t_ns "-5" is not a time`},
		{"trace.csv", th + "tx,1e3,0,1,0,1000,60,telem,\n", `trace.csv line 2: t_ns "1e3" is not a time`},
		{"trace.csv", th + "tx,1000,0,1,0,NaN,60,telem,\n", `trace.csv line 2: t_gen_ns "NaN" is not a time`},
		{"trace.csv", th + "boom,1000,0,1,0,1000,60,telem,\n", `trace.csv line 2: event "boom" is not tx, rx or drop`},
		{"trace.csv", "event,t_ns,dst\ntx,1,0\n", `trace.csv line 2: no column src`},
		{"trace.csv", th + "tx,1000,0\n", `trace.csv line 2: wrong number of fields`},
		{"vehicles.csv", vh + "0,2,0,0,0,0,0,0,0,0,0,hold,0,0,12.6,0,101325\n", `vehicles.csv line 2: id "2" is not a node of the run (0 to 1)`},
		{"vehicles.csv", vh + "0,0.5,0,0,0,0,0,0,0,0,0,hold,0,0,12.6,0,101325\n", `vehicles.csv line 2: id "0.5" is not a node`},
		{"vehicles.csv", vh + "0,0,NaN,0,0,0,0,0,0,0,0,hold,0,0,12.6,0,101325\n", `vehicles.csv line 2: x "NaN" is not a finite number`},
		{"vehicles.csv", vh + "0,0,0,0,0,0,0,0,0,0,0,hold,0,0,+Inf,0,101325\n", `vehicles.csv line 2: battery_v "+Inf" is not a finite number`},
		{"vehicles.csv", vh + "0,0,0,0,0,1e309,0,0,0,0,0,hold,0,0,12,0,101325\n", `vehicles.csv line 2: vx "1e309" is not a finite number`},
		{"vehicles.csv", vh + "0,0,0,0,0,0,0,0,0,0,0,hold,yes,0,12,0,101325\n", `vehicles.csv line 2: armed "yes" is not 0 or 1`},
		{"vehicles.csv", vh + "0,0,0,0,0,0,0,0,0,0,0," + strings.Repeat("m", 300) + ",0,0,12,0,101325\n", `vehicles.csv line 2: mode: 300 bytes, more than 256`},
		{"vehicles.csv", vh + "99000000000,0,0,0,0,0,0,0,0,0,0,hold,0,0,12,0,101325\n", `vehicles.csv line 2: t_ns "99000000000" is not a time within the run (0 to 10000000000 ns)`},
		{"events.csv", eh + "1000,3,agent,x,\n", `events.csv line 2: node "3" is not a node of the run (-1 to 2)`},
		{"events.csv", eh + "1000,0,agent,x,\"open\n", `events.csv line 2: extraneous or missing " in quoted-field`},
		{"summary.json", `{"duration_ns":-1,"vehicles":[{"name":"a"}]}`, `summary.json: duration_ns -1 is negative`},
		{"summary.json", `{"duration_ns":1,"nodes":1,"vehicles":[{"name":"a"},{"name":"b"}]}`, `summary.json: nodes 1 is fewer than its 2 vehicles`},
		{"summary.json", `{"duration_ns":1,"nodes":-4}`, `summary.json: nodes -4 is not a node count`},
		{"summary.json", `{"duration_ns":1,"nodes":2,"vehicles":[{"name":"a"},{"name":"b"}]}`, `2 vehicles and 1 fixed nodes (config.json), but nodes is 2`},
		{"summary.json", `{"duration_ns":1e30}`, `summary.json: json: cannot unmarshal number 1e30`},
		{"config.json", `{"world":{"obstacles":[{"min":[0,0,0],"max":[1,-1,1]}]}}`, `config.json: world.obstacles[0]: min [0 0 0], max [1 -1 1] is not a box`},
		{"config.json", `{"nodes":[{"name":"g","position":[0,0,1e999]}]}`, `config.json: json: cannot unmarshal number 1e999`},
	}
	for _, c := range cases {
		dir := writeRun(t, map[string]string{c.file: c.text})
		_, err := LoadReplay(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want %q", c.file, c.text, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), filepath.Join(dir, c.file)) {
			t.Errorf("%s: the error %q does not name the file's path", c.file, err)
		}
	}
}

// TestLoadReplayBoundedReads: a run directory's files are read as
// untrusted, every one bounded: on fc3ddb2 a vehicles.csv or trace.csv
// pointing at /dev/zero was read without end (500+ MB and growing), a
// named pipe blocked for ever, and one long line was held whole. The
// test asserts bytes allocated, not time.
func TestLoadReplayBoundedReads(t *testing.T) {
	bigLine := func(t *testing.T, dir, name string) {
		// A header, then 256 MiB of zero bytes (sparse): one endless line.
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintln(f, strings.SplitN(goodRun[name], "\n", 2)[0])
		if err := f.Truncate(256 << 20); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		make  func(t *testing.T, dir string)
		want  error
		words string
	}{
		{"vehicles.csv is /dev/zero", func(t *testing.T, dir string) { symlink(t, "/dev/zero", filepath.Join(dir, "vehicles.csv")) }, nil, "vehicles.csv is a symbolic link to /dev/zero"},
		{"trace.csv is /dev/zero", func(t *testing.T, dir string) { symlink(t, "/dev/zero", filepath.Join(dir, "trace.csv")) }, nil, "trace.csv is a symbolic link to /dev/zero"},
		{"events.csv is /dev/zero", func(t *testing.T, dir string) { symlink(t, "/dev/zero", filepath.Join(dir, "events.csv")) }, nil, "events.csv is a symbolic link to /dev/zero"},
		{"summary.json is /dev/zero", func(t *testing.T, dir string) { symlink(t, "/dev/zero", filepath.Join(dir, "summary.json")) }, nil, "summary.json is a symbolic link to /dev/zero"},
		{"config.json is /dev/zero", func(t *testing.T, dir string) { symlink(t, "/dev/zero", filepath.Join(dir, "config.json")) }, nil, "config.json is a symbolic link to /dev/zero"},
		{"trace.csv is a named pipe", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "trace.csv"))
			if err := syscall.Mkfifo(filepath.Join(dir, "trace.csv"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, untrusted.ErrNotRegular, "a named pipe"},
		{"config.json leads out of the run directory", func(t *testing.T, dir string) {
			outside := filepath.Join(t.TempDir(), "secret.json")
			os.WriteFile(outside, []byte(goodRun["config.json"]), 0o644)
			symlink(t, outside, filepath.Join(dir, "config.json"))
		}, nil, "config.json is a symbolic link to /"},
		{"vehicles.csv is a directory", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "vehicles.csv"))
			os.Mkdir(filepath.Join(dir, "vehicles.csv"), 0o755)
		}, untrusted.ErrNotRegular, "a directory"},
		{"trace.csv is one endless line", func(t *testing.T, dir string) { bigLine(t, dir, "trace.csv") }, nil, "trace.csv line 2: a record longer than 65536 bytes"},
		{"vehicles.csv is one endless line", func(t *testing.T, dir string) { bigLine(t, dir, "vehicles.csv") }, nil, "vehicles.csv line 2: a record longer than 65536 bytes"},
		{"vehicles.csv is larger than the cap", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, "vehicles.csv"), untrusted.MaxCSV+1); err != nil {
				t.Skipf("no sparse file of %d bytes here: %v", int64(untrusted.MaxCSV+1), err)
			}
		}, untrusted.ErrTooLarge, "vehicles.csv"},
		{"summary.json is larger than its cap", func(t *testing.T, dir string) {
			f := filepath.Join(dir, "summary.json")
			os.Truncate(f, maxJSON+1)
		}, untrusted.ErrTooLarge, "summary.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeRun(t, nil)
			c.make(t, dir)
			var err error
			alloc := hostile.Allocated(func() { _, err = LoadReplay(dir) })
			if err == nil || c.want != nil && !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.words) {
				t.Errorf("error %v, want %v mentioning %q", err, c.want, c.words)
			}
			if alloc > 4<<20 {
				t.Errorf("loading allocated %d MB, want at most 4", alloc>>20)
			}
			t.Logf("%v (%d KB allocated)", err, alloc>>10)
		})
	}
}

func symlink(t *testing.T, to, name string) {
	t.Helper()
	os.Remove(name)
	if err := os.Symlink(to, name); err != nil {
		t.Fatal(err)
	}
}

// TestLoadReplayCutsLongTables: every table stops at its row cap (lowered
// here) and the replay says so.
func TestLoadReplayCutsLongTables(t *testing.T) {
	old := limits
	defer func() { limits = old }()
	limits.samples, limits.net, limits.events = 2, 1, 1
	r, err := LoadReplay(writeRun(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Samples.T) != 2 || !r.SamplesCut || len(r.Net.T) != 1 || !r.NetCut || len(r.Events) != 1 || !r.EventsCut {
		t.Errorf("%d samples (cut %v), %d network events (cut %v), %d events (cut %v)", len(r.Samples.T), r.SamplesCut, len(r.Net.T), r.NetCut, len(r.Events), r.EventsCut)
	}
}

// TestLoadReplayMissingFiles: vehicles.csv is required; the others are
// noted as missing.
func TestLoadReplayMissingFiles(t *testing.T) {
	if _, err := LoadReplay(writeRun(t, map[string]string{"vehicles.csv": ""})); err == nil || !strings.Contains(err.Error(), "has no vehicles.csv") {
		t.Errorf("no vehicles.csv: %v", err)
	}
	if _, err := LoadReplay(writeRun(t, map[string]string{"summary.json": ""})); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no summary.json: %v", err)
	}
	r, err := LoadReplay(writeRun(t, map[string]string{"trace.csv": "", "events.csv": "", "config.json": ""}))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Missing) != 3 {
		t.Errorf("missing %v", r.Missing)
	}
}

// fakePacer records what /control asked of it; it accepts factors from
// 0.01 to 1000 as runner.PaceControl does.
type fakePacer struct {
	mu     sync.Mutex
	paused bool
	factor float64
	calls  int
}

func (p *fakePacer) Pause(on bool) { p.mu.Lock(); p.paused = on; p.calls++; p.mu.Unlock() }
func (p *fakePacer) SetFactor(f float64) error {
	if !(f >= 0.01 && f <= 1000) {
		return fmt.Errorf("the real-time factor must be a number from 0.01 to 1000, got %v", f)
	}
	p.mu.Lock()
	p.factor = f
	p.calls++
	p.mu.Unlock()
	return nil
}
func (p *fakePacer) State() (bool, float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused, p.factor
}

func (p *fakePacer) Speed() float64 { return 0.5 }

// TestControlRefusesCrossSiteRequests: /control changes the run only for
// JSON from the page itself. On fc3ddb2 a cross-site text/plain POST (what
// any web page can send without asking) paused the run.
func TestControlRefusesCrossSiteRequests(t *testing.T) {
	p := &fakePacer{}
	h := LivePages(p, 1)
	do := func(method, body string, header map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://127.0.0.1:8080/control", strings.NewReader(body))
		r.Host = "127.0.0.1:8080"
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	refused := []struct {
		body   string
		header map[string]string
		code   int
	}{
		{`{"pause":true}`, map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{`{"pause":true}`, map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}, http.StatusForbidden},
		{`{"pause":true}`, map[string]string{"Content-Type": "application/json", "Origin": "http://localhost:8080"}, http.StatusForbidden},
		{`{"pause":true}`, map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, http.StatusUnsupportedMediaType},
		{`pause=true`, map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "same-origin"}, http.StatusUnsupportedMediaType},
		{`{"pause":true,"evil":1}`, map[string]string{"Content-Type": "application/json"}, http.StatusBadRequest},
		{`{"pause":true} {"pause":false}`, map[string]string{"Content-Type": "application/json"}, http.StatusBadRequest},
	}
	for _, c := range refused {
		w := do("POST", c.body, c.header)
		if w.Code != c.code {
			t.Errorf("POST %s with %v: %d %q, want %d", c.body, c.header, w.Code, w.Body.String(), c.code)
		}
	}
	if p.calls != 0 {
		t.Fatalf("refused requests changed the run: paused %v, %d calls", p.paused, p.calls)
	}
	if w := do("PUT", `{"pause":true}`, map[string]string{"Content-Type": "application/json"}); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", w.Code)
	}
	w := do("POST", `{"pause":true}`, map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin"})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"paused":true`) {
		t.Errorf("the page's own request: %d %q", w.Code, w.Body.String())
	}
}

// TestControlBoundsTheFactor: a factor out of 0.01..1000 is a 400 with
// the range, and leaves the run as it was (on fc3ddb2's pacer 1e-300
// froze the run; see runner.TestPaceFactorBounds for the pacer itself).
func TestControlBoundsTheFactor(t *testing.T) {
	p := &fakePacer{}
	h := LivePages(p, 1)
	for _, body := range []string{`{"factor":1e-300}`, `{"factor":0}`, `{"factor":-1}`, `{"factor":1001}`, `{"factor":1e999}`, `{"factor":"NaN"}`, `{"factor":null,"pause":"yes"}`} {
		r := httptest.NewRequest("POST", "/control", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %q, want 400", body, w.Code, w.Body.String())
		}
	}
	if p.calls != 0 {
		t.Errorf("bad factors changed the run: factor %v", p.factor)
	}
}

// TestEveryPageHasSecurityHeaders: every response of the live and replay
// pages carries the Content-Security-Policy (no inline script), nosniff
// and no framing (fc3ddb2 sent none).
func TestEveryPageHasSecurityHeaders(t *testing.T) {
	rep, err := LoadReplay(writeRun(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	replay, err := ReplayPages(rep, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]http.Handler{"live": LivePages(&fakePacer{}, 1), "replay": replay} {
		for _, path := range []string{"/", "/index.html", "/app.js", "/style.css", "/vendor/three.module.min.js", "/control", "/run.json", "/nothing"} {
			r := httptest.NewRequest("GET", "http://127.0.0.1:8080"+path, nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			csp := w.Header().Get("Content-Security-Policy")
			if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") ||
				w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("X-Frame-Options") != "DENY" {
				t.Errorf("%s %s (%d): headers %v", name, path, w.Code, w.Header())
			}
		}
	}
	// The page itself has no inline script or style for the policy to
	// block.
	for _, name := range []string{"static/index.html", "static/app.js"} {
		b, _ := static.ReadFile(name)
		for _, bad := range []string{"<script>", "style=", "<style", " onclick=", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}

// TestReplayAnswersOnlyItsHost: skyloop view answers only the names of
// its loopback address; a page reached through another name (DNS
// rebinding) gets 421, not run.json (fc3ddb2 served any Host).
func TestReplayAnswersOnlyItsHost(t *testing.T) {
	rep, err := LoadReplay(writeRun(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := ReplayPages(rep, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pages)
	defer srv.Close()
	get := func(host, path string) (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, host := range []string{"attacker.example", fmt.Sprintf("attacker.example:%d", port), "127.0.0.1.attacker.example"} {
		for _, path := range []string{"/", "/run.json"} {
			if code, body := get(host, path); code != http.StatusMisdirectedRequest || strings.Contains(body, "uav-0") {
				t.Errorf("Host %s %s: %d %.80q", host, path, code, body)
			}
		}
	}
	for _, host := range []string{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("localhost:%d", port), fmt.Sprintf("[::1]:%d", port)} {
		if code, body := get(host, "/run.json"); code != http.StatusOK || !strings.Contains(body, "uav-0") {
			t.Errorf("Host %s: %d %.80q", host, code, body)
		}
	}
}
