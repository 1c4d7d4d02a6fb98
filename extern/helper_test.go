package extern_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"skyloop/extern"
	"skyloop/extern/client"
)

// TestMain doubles as the external agents: with SKYLOOP_HELPER set, the
// test binary is a client process in the given mode instead of a test run.
func TestMain(m *testing.M) {
	if mode := os.Getenv("SKYLOOP_HELPER"); mode != "" {
		if err := helper(mode); err != nil && !client.IsEnd(err) {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperCommand returns a command template that runs this test binary as
// a client in mode, one process per agent.
func helperCommand(t testing.TB, mode string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("SKYLOOP_HELPER=%s SKYLOOP_VEHICLE={id} exec %s", mode, exe)
}

func helper(mode string) error {
	switch mode {
	case "bench":
		// One process, one connection per agent; every agent steps at every
		// tick and does nothing else.
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for _, s := range strings.Split(os.Getenv("SKYLOOP_VEHICLES"), ",") {
			id, _ := strconv.Atoi(s)
			wg.Add(1)
			go func() {
				defer wg.Done()
				a, err := client.Connect(client.Options{Vehicle: id})
				if err != nil {
					errs <- err
					return
				}
				defer a.Close()
				for {
					if err := a.Step(); err != nil {
						if !client.IsEnd(err) {
							errs <- err
						}
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	if mode == "net" || mode == "netbad" {
		return netHelper(mode)
	}
	a, err := client.Connect(client.Options{Vehicle: -1})
	if err != nil {
		return err
	}
	defer a.Close()
	if fn := peerModes[mode]; fn != nil {
		return runPeerMode(a, fn)
	}
	switch mode {
	case "mission":
		m := &mission{id: a.ID()}
		for {
			m.step(a.Time(), a.Telemetry(), a.Inbox(), a)
			if err := a.Sleep(100 * time.Millisecond); err != nil {
				return err
			}
		}
	case "crash", "hang", "malformed", "oversized", "badcmd":
		for a.Time() < time.Second {
			if err := a.Sleep(100 * time.Millisecond); err != nil {
				return err
			}
		}
		switch mode {
		case "crash":
			fmt.Fprintln(os.Stderr, "helper: crashing on purpose at", a.Time())
			os.Exit(3)
		case "hang":
			time.Sleep(time.Hour)
		case "malformed":
			raw(a, []byte(`{"type": "send", "vehicle": `))
		case "oversized":
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], 2<<20)
			rawBytes(a, hdr[:])
		case "badcmd":
			a.Takeoff(-1)
		}
		return a.Step()
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// raw writes a length-prefixed frame with the given (broken) body.
func raw(a *client.Agent, body []byte) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	rawBytes(a, append(hdr[:], body...))
}

func rawBytes(a *client.Agent, b []byte) { a.RawWrite(b) }

// netHelper is a small external network simulator: 5 ms latency and a
// 10 m range checked at send time ("netbad" reports a packet that does
// not exist).
func netHelper(mode string) error {
	n, err := client.ConnectNetwork(client.Options{Name: "test network"})
	if err != nil {
		return err
	}
	defer n.Close()
	nodes := len(n.Welcome.Nodes)
	var pos []extern.Vec3
	type rx struct {
		id  uint64
		dst int
		at  int64
	}
	var sched []rx
	left := map[uint64]int{}
	for {
		f, err := n.Next()
		if err != nil {
			return err
		}
		if f.Positions != nil {
			pos = f.Positions
		}
		var ev []extern.NetEvent
		var rel []uint64
		for _, p := range f.Packets {
			for _, d := range receivers(p, nodes) {
				dx, dy, dz := pos[d][0]-pos[p.Src][0], pos[d][1]-pos[p.Src][1], pos[d][2]-pos[p.Src][2]
				if math.Sqrt(dx*dx+dy*dy+dz*dz) > 10 {
					ev = append(ev, extern.NetEvent{ID: p.ID, Dst: d, At: p.TSend, Drop: "range"})
					continue
				}
				sched = append(sched, rx{p.ID, d, p.TSend + 5e6})
				left[p.ID]++
			}
			if left[p.ID] == 0 {
				rel = append(rel, p.ID)
			}
		}
		kept := sched[:0]
		for _, r := range sched {
			if r.at > f.T {
				kept = append(kept, r)
				continue
			}
			ev = append(ev, extern.NetEvent{ID: r.id, Dst: r.dst, At: r.at})
			if left[r.id]--; left[r.id] == 0 {
				delete(left, r.id)
				rel = append(rel, r.id)
			}
		}
		sched = kept
		if mode == "netbad" && f.T >= 1e9 {
			ev = append(ev, extern.NetEvent{ID: 1 << 40, Dst: 0, At: f.T})
		}
		if err := n.Done(ev, rel); err != nil {
			return err
		}
	}
}

// receivers lists the nodes packet p is meant for: its destination, or
// every other node for a broadcast.
func receivers(p extern.Packet, nodes int) []int {
	if p.Dst >= 0 {
		return []int{p.Dst}
	}
	var dsts []int
	for d := 0; d < nodes; d++ {
		if d != p.Src {
			dsts = append(dsts, d)
		}
	}
	return dsts
}
