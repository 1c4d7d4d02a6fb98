package relay_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"skyloop/internal/nstest"
	"skyloop/orchestrate"
	"skyloop/relay"
	"skyloop/runner"
	"skyloop/scenario"
)

// The namespace test stands two network namespaces in for two hosts: the
// coordinator (skyloop, listening for remote agents on 10.78.0.1:7000 over
// TLS) and host B (the agents, and the relays when used), joined by a veth
// pair. The link's 1 ms each way comes from a delay proxy on host B: this
// kernel has no netem qdisc ("Specified qdisc kind is unknown"), so the
// delay is added in user space to every chunk crossing the link, in both
// directions, in order.

const (
	coordAddr = "10.78.0.1"
	hostBAddr = "10.78.0.2"
	linkDelay = time.Millisecond
)

// helperMode runs the modes the namespace test starts in its namespaces;
// it returns false when the process is not a helper.
func helperMode() (bool, error) {
	switch os.Getenv("SKYLOOP_HELPER") {
	case "coordinator":
		return true, coordinator()
	case "delay":
		delay := linkDelay
		if d, err := time.ParseDuration(os.Getenv("SKYLOOP_LINK_DELAY")); err == nil {
			delay = d // for measuring the floor without the link's delay
		}
		return true, delayProxy(os.Getenv("SKYLOOP_LISTEN"), os.Getenv("SKYLOOP_TARGET"), delay, os.Getenv("SKYLOOP_READY"))
	case "relay":
		ids, err := relay.ParseList(os.Getenv("SKYLOOP_VEHICLES"))
		if err != nil {
			return true, err
		}
		_, err = relay.Run(context.Background(), relay.Config{Upstream: os.Getenv("SKYLOOP_UPSTREAM"), Fingerprint: os.Getenv("SKYLOOP_FINGERPRINT"),
			Token: os.Getenv("SKYLOOP_TOKEN"), Vehicles: ids, Listen: os.Getenv("SKYLOOP_LISTEN"), Name: "relay " + os.Getenv("SKYLOOP_LISTEN"),
			Ready: func(string, string) { writeAtomic(os.Getenv("SKYLOOP_READY"), "ok") }})
		return true, err
	}
	return false, nil
}

// coordinator runs the scenario in SKYLOOP_SCENARIO into SKYLOOP_OUT,
// writes the remote address, fingerprint and token to SKYLOOP_OUT/remote
// once it listens, and the run's wall time to SKYLOOP_OUT/wall_ns.
func coordinator() error {
	out := os.Getenv("SKYLOOP_OUT")
	if path := os.Getenv("SKYLOOP_CPUPROFILE"); path != "" {
		// For looking into the benchmark: go tool pprof.
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	sc, err := scenario.Parse("netns.yaml", []byte(os.Getenv("SKYLOOP_SCENARIO")), registry.Schema())
	if err != nil {
		return err
	}
	r, err := buildErr(sc)
	if err != nil {
		return err
	}
	var began, ended time.Time
	_, err = runner.Execute(r, filepath.Join(out, "run"), runner.Options{ExternListen: coordAddr + ":7000",
		ExternReady: func(string, string, string) {},
		ExternRemote: func(addr, fp, token string) {
			writeAtomic(filepath.Join(out, "remote"), addr+" "+fp+" "+token)
		},
		Started: func() { began = time.Now() },
		Ended:   func() { ended = time.Now() }})
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(out, "wall_ns"), strconv.FormatInt(ended.Sub(began).Nanoseconds(), 10))
}

// writeAtomic writes a file another process polls for.
func writeAtomic(path, text string) error {
	if err := os.WriteFile(path+".tmp", []byte(text), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// delayProxy forwards every connection to listen on to target, holding
// each chunk for delay in both directions.
func delayProxy(listen, target string, delay time.Duration, ready string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if err := writeAtomic(ready, "ok"); err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			go pump(u, c, delay)
			pump(c, u, delay)
		}()
	}
}

type chunk struct {
	b   []byte
	due time.Time
}

func pump(dst, src net.Conn, delay time.Duration) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 64<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b[:n], time.Now().Add(delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	io.Copy(io.Discard, src)
}

// needHosts takes the namespace tests' lock and checks the privileges,
// once per test.
func needHosts(t testing.TB) { nstest.Need(t, orchestrate.CheckPrivileges, "ip") }

var hostSeq int

// hosts makes the two namespaces and the link; they go when the test ends
// (needHosts first).
func hosts(t testing.TB) (coord, hostB string) {
	t.Helper()
	hostSeq++
	tag := fmt.Sprintf("%d%d", os.Getpid()%10000, hostSeq)
	coord, hostB = "skyrc"+tag, "skyrb"+tag
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", coord)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", coord).Run() })
	ip("netns", "add", hostB)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", hostB).Run() })
	ip("link", "add", "skyrc"+tag, "netns", coord, "type", "veth", "peer", "name", "skyrb"+tag, "netns", hostB)
	ip("-n", coord, "addr", "add", coordAddr+"/24", "dev", "skyrc"+tag)
	ip("-n", hostB, "addr", "add", hostBAddr+"/24", "dev", "skyrb"+tag)
	for _, ns := range []string{coord, hostB} {
		ip("-n", ns, "link", "set", "lo", "up")
	}
	ip("-n", coord, "link", "set", "skyrc"+tag, "up")
	ip("-n", hostB, "link", "set", "skyrb"+tag, "up")
	return coord, hostB
}

// helperProc is a helper process; done is closed when it has exited,
// with err its status.
type helperProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// inNS starts this test binary in namespace ns as a helper.
func inNS(t testing.TB, ns string, env ...string) *helperProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command("ip", "netns", "exec", ns, exe)
	c.Env = append(os.Environ(), env...)
	var tail bytes.Buffer
	c.Stderr = &tail
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helperProc{cmd: c, done: make(chan struct{})}
	go func() {
		h.err = c.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		c.Process.Kill()
		<-h.done
		if t.Failed() && tail.Len() > 0 {
			t.Logf("helper %v: %s", env[0], tail.String())
		}
	})
	return h
}

// remoteRun runs text on the coordinator with n agents on host B,
// connected directly (relays 0) or through relays, and returns the run
// directory and the wall time per tick.
func remoteRun(t testing.TB, text, agentMode string, n, relays int) (string, time.Duration) {
	coord, hostB := hosts(t)
	out := t.TempDir()
	co := inNS(t, coord, "SKYLOOP_HELPER=coordinator", "SKYLOOP_OUT="+out, "SKYLOOP_SCENARIO="+text)
	var remote []string
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if b, err := os.ReadFile(filepath.Join(out, "remote")); err == nil {
			remote = strings.Fields(string(b))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the coordinator did not listen within 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, port, _ := net.SplitHostPort(remote[0])
	fp, token := remote[1], remote[2]
	inNS(t, hostB, "SKYLOOP_HELPER=delay", "SKYLOOP_LISTEN=127.0.0.1:7100", "SKYLOOP_TARGET="+coordAddr+":"+port,
		"SKYLOOP_READY="+filepath.Join(out, "delay.ready"))
	waitFile(t, filepath.Join(out, "delay.ready"))
	list := func(lo, hi int) string { return relay.FormatList(span(lo, hi)) }
	vehicles := func(lo, hi int) string {
		s := make([]string, 0, hi-lo+1)
		for _, v := range span(lo, hi) {
			s = append(s, strconv.Itoa(v))
		}
		return strings.Join(s, ",")
	}
	if relays == 0 {
		inNS(t, hostB, "SKYLOOP_HELPER="+agentMode, "SKYLOOP_ADDR=127.0.0.1:7100", "SKYLOOP_FINGERPRINT="+fp, "SKYLOOP_TOKEN="+token,
			"SKYLOOP_SOCKET=", "SKYLOOP_VEHICLES="+vehicles(0, n-1))
	} else {
		per := n / relays
		for i := 0; i < relays; i++ {
			lo, hi := i*per, (i+1)*per-1
			local := fmt.Sprintf("127.0.0.1:%d", 7201+i)
			inNS(t, hostB, "SKYLOOP_HELPER=relay", "SKYLOOP_UPSTREAM=127.0.0.1:7100", "SKYLOOP_FINGERPRINT="+fp, "SKYLOOP_TOKEN="+token,
				"SKYLOOP_VEHICLES="+list(lo, hi), "SKYLOOP_LISTEN="+local, "SKYLOOP_READY="+filepath.Join(out, local+".ready"))
			waitFile(t, filepath.Join(out, local+".ready"))
			inNS(t, hostB, "SKYLOOP_HELPER="+agentMode, "SKYLOOP_ADDR="+local, "SKYLOOP_FINGERPRINT=", "SKYLOOP_TOKEN="+token,
				"SKYLOOP_SOCKET=", "SKYLOOP_VEHICLES="+vehicles(lo, hi))
		}
	}
	select {
	case <-co.done:
		if co.err != nil {
			t.Fatalf("coordinator: %v", co.err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("the run did not end within 5 minutes")
	}
	b, err := os.ReadFile(filepath.Join(out, "wall_ns"))
	if err != nil {
		t.Fatal(err)
	}
	wall, _ := strconv.ParseInt(string(b), 10, 64)
	return filepath.Join(out, "run"), time.Duration(wall)
}

// waitFile waits until a helper has written path.
func waitFile(t testing.TB, path string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s was not written within 2 minutes", path)
}

// TestRelaysAcrossHosts: 100 agents on host B, connected directly to
// skyloop on the coordinator over the 1 ms link, and behind 4 relays, give
// identical outputs.
func TestRelaysAcrossHosts(t *testing.T) {
	needHosts(t)
	text := swarmFor(100, "abort", "100ms", "3s")
	direct, wallD := remoteRun(t, text, "fleet", 100, 0)
	relayed, wallR := remoteRun(t, text, "fleet", 100, 4)
	t.Logf("3 s with 100 agents stepping every 100 ms: direct %v, through 4 relays %v", wallD, wallR)
	for _, f := range []string{"trace.csv", "vehicles.csv", "deliveries.csv", "events.csv"} {
		a, err := os.ReadFile(filepath.Join(direct, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(relayed, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(a) < 1000 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between direct and relayed agents (%d vs %d bytes)", f, len(a), len(b))
		}
	}
}

// BenchmarkRelayOverhead measures the wall time per tick of 100 remote
// agents that step at every tick and do nothing else, on host B behind the
// 1 ms link: connected directly, and through 4 relays.
func BenchmarkRelayOverhead(b *testing.B) {
	needHosts(b)
	const ticks = 500
	text := swarmFor(100, "abort", "1ms", "500ms")
	for _, relays := range []int{0, 4} {
		name := "direct"
		if relays > 0 {
			name = fmt.Sprintf("relays%d", relays)
		}
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				_, wall := remoteRun(b, text, "steps", 100, relays)
				total += wall
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/ticks, "ns/tick")
		})
	}
}
