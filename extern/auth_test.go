package extern_test

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"skyloop/extern"
	"skyloop/extern/client"
	"skyloop/runner"
)

// frameBytes is a length-prefixed frame with the given body.
func frameBytes(body string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

// refusedIn reads the count of connections refused before authentication
// from a run directory's summary.json.
func refusedIn(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Services map[string]map[string]map[string]any `json:"services"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r := s.Services["extern"]["refused"]
	if r == nil {
		t.Fatalf("summary.json counts no refused connections: %.300s", b)
	}
	return r
}

// TestStrangersCannotAbortRun: hellos without the run's token (a wrong
// one, none with version 99, an empty one, a frame that is not JSON or not
// a hello) naming waiting vehicles are refused, counted in summary.json,
// and change nothing else: the agents connect after them and the run ends
// normally. (Each used to end the run at once: "connected for node 0 but
// was refused".)
func TestStrangersCannotAbortRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var answers []string
	errs := make(chan error, 8)
	ready := func(socket, addr, token string) {
		for _, s := range []struct{ network, addr, body string }{
			{"unix", socket, `{"type":"hello","version":1,"token":"nope","vehicles":[0]}`},
			{"tcp", addr, `{"type":"hello","version":99,"vehicles":[1]}`},
			{"tcp", addr, `{"type":"hello","version":1,"token":"","vehicles":[2],"role":1}`},
			{"unix", socket, `not json at all`},
			{"tcp", addr, `{"type":"done","vehicle":3}`},
		} {
			c, err := net.Dial(s.network, s.addr)
			if err != nil {
				errs <- err
				continue
			}
			c.Write(frameBytes(s.body))
			var buf []byte
			f, err := extern.ReadFrame(bufio.NewReader(c), &buf)
			c.Close()
			if err != nil || f.Type != extern.TypeError {
				errs <- fmt.Errorf("stranger %s: got %v %v, want an error frame", s.body, f, err)
				continue
			}
			answers = append(answers, f.Reason)
		}
		for id := 0; id < 4; id++ {
			go func() {
				a, err := client.Connect(client.Options{Addr: addr, Token: token, Vehicle: id})
				if err != nil {
					errs <- err
					return
				}
				defer a.Close()
				m := &mission{id: id}
				for {
					m.step(a.Time(), a.Telemetry(), a.Inbox(), a)
					if err := a.Sleep(100 * time.Millisecond); err != nil {
						if !client.IsEnd(err) {
							errs <- err
						}
						return
					}
				}
			}()
		}
	}
	_, err := runner.Execute(build(t, withBehavior("{type: extern, period: 100ms, connect_timeout: 120s}")), dir, runner.Options{ExternReady: ready})
	if err != nil {
		t.Fatalf("strangers aborted the run: %v", err)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	t.Logf("the strangers were told: %q", answers)
	if len(answers) != 5 || answers[0] != "wrong token" || answers[1] != "no token" {
		t.Errorf("answers %q", answers)
	}
	r := refusedIn(t, dir)
	reasons, _ := r["reasons"].(map[string]any)
	if r["total"] != 5.0 || reasons["wrong token"] != 2.0 || reasons["no token"] != 2.0 || reasons["malformed hello"] != 1.0 {
		t.Errorf("summary.json: refused %v", r)
	}
}

// rawAgent is a minimal agent on connection c: it answers every tick with
// done until the run ends.
func rawAgent(c net.Conn, token string, id int) error {
	b, _ := extern.AppendFrame(nil, &extern.Frame{Type: extern.TypeHello, Version: extern.Version, Token: token, Vehicles: []int{id}, Name: "raw"})
	if _, err := c.Write(b); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	var buf []byte
	for {
		f, err := extern.ReadFrame(r, &buf)
		if err != nil {
			return err
		}
		switch f.Type {
		case extern.TypeTick:
			b, _ := extern.AppendFrame(b[:0], &extern.Frame{Type: extern.TypeDone, Vehicle: id})
			if _, err := c.Write(b); err != nil {
				return err
			}
		case extern.TypeEnd:
			return nil
		case extern.TypeError:
			return errors.New(f.Reason)
		}
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestUnauthenticatedConnectionsBounded: 200 TLS connections from one host
// each holding an unfinished 1 MiB frame cost skyloop a bounded few MB: at
// most 64 of them (MaxUnauthenticatedPerHost) are read at once, 4 KiB at
// most each, the others wait unread; and an agent from another address
// joins while they hold on. (Each used to cost 1 MiB and 64 KiB for 30 s,
// all at once: the length prefix was allocated before the token was
// checked.)
func TestUnauthenticatedConnectionsBounded(t *testing.T) {
	const strangers = 200
	const perHost = 64     // extern.MaxUnauthenticatedPerHost
	const bound = 24 << 20 // bytes of heap for all of them, both ends
	dir := filepath.Join(t.TempDir(), "run")
	var (
		mu               sync.Mutex
		open, maxOpen    int // stranger connections through their TLS handshake
		openAtJoin, grew int
		wg               sync.WaitGroup
		agentErr         = make(chan error, 1)
	)
	remote := func(addr, fp, token string) {
		go func() {
			before := heapAfterGC()
			for i := 0; i < strangers; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, Timeout: 5 * time.Minute}
					c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
					if err != nil {
						return // closed unread when the run ended
					}
					defer c.Close()
					mu.Lock()
					open++
					maxOpen = max(maxOpen, open)
					mu.Unlock()
					hdr := binary.BigEndian.AppendUint32(nil, extern.MaxFrame)
					c.Write(append(hdr, `{"type":"hello","version":1,"vehicles":[`+strings.Repeat("0,", 500)...))
					c.Read(make([]byte, 1)) // until the server closes it
					mu.Lock()
					open--
					mu.Unlock()
				}()
			}
			// Wait until the server reads as many as it will.
			for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				n := open
				mu.Unlock()
				if n >= perHost || time.Now().After(deadline) {
					break
				}
			}
			mu.Lock()
			openAtJoin = open
			mu.Unlock()
			// The server reads what they sent: watch the heap a moment,
			// stopping at the first sign of growth beyond the bound.
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				if h := heapAfterGC(); h > before {
					grew = max(grew, int(h-before))
					if grew > bound {
						break
					}
				}
			}
			// An agent on another address joins while they hold on.
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: time.Minute}
			cfg, err := extern.ClientTLS(fp)
			if err != nil {
				agentErr <- err
				return
			}
			c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
			if err != nil {
				agentErr <- err
				return
			}
			defer c.Close()
			agentErr <- rawAgent(c, token, 0)
		}()
	}
	text := `
name: strangers
seed: 1
duration: 2s
tick: 1ms
vehicles:
  - name: uav
    kind: pointmass
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 4}
    behaviors:
      - {type: extern, period: 100ms, connect_timeout: 300s}
network:
  backend: ideal
`
	if _, err := runner.Execute(build(t, text), dir, runner.Options{ExternListen: "127.0.0.1:0", ExternRemote: remote}); err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := <-agentErr; err != nil {
		t.Fatalf("agent: %v", err)
	}
	wg.Wait() // the run's end closed them all
	t.Logf("%d strangers read at once when the agent joined (%d at most); the heap grew by %.1f MB", openAtJoin, maxOpen, float64(grew)/(1<<20))
	if grew > bound {
		t.Errorf("%d unauthenticated connections grew the heap by %.1f MB (bound %d MB)", strangers, float64(grew)/(1<<20), bound>>20)
	}
	if openAtJoin > perHost {
		t.Errorf("%d connections of one host read at once before their hello (at most %d)", openAtJoin, perHost)
	}
}
