package extern_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"

	"skyloop/extern"
	"skyloop/runner"
)

// fakeRelay joins the run at addr as a relay for nodes 0-3 and reads its
// batches of ticks: after the first, it closes the connection (killed), or
// (frozen) never answers.
func fakeRelay(addr, token string, killed bool, errs chan<- error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		errs <- err
		return
	}
	defer c.Close()
	b, _ := extern.AppendFrame(nil, &extern.Frame{Type: extern.TypeHello, Version: extern.Version, Token: token,
		Vehicles: []int{0, 1, 2, 3}, Name: "fake relay", Batch: true})
	if _, err := c.Write(b); err != nil {
		errs <- err
		return
	}
	r := bufio.NewReader(c)
	var buf []byte
	for {
		f, err := extern.ReadFrame(r, &buf)
		if err != nil {
			errs <- nil // the run closed the connection
			return
		}
		if f.Type == extern.TypeBatch && killed {
			errs <- nil
			return // closes the connection
		}
	}
}

// TestRelayFaultNamesRelay: a relay that dies, or freezes, is reported by
// its name, address and nodes (it used to be one agent's "connection closed
// by the agent" or "no END-TICK", as if the agent had failed).
func TestRelayFaultNamesRelay(t *testing.T) {
	for _, c := range []struct {
		name   string
		killed bool
		want   string
	}{
		{"killed", true, "the connection closed (relay killed or crashed?)"},
		{"frozen", false, "no answer for node 0 within 2s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			errs := make(chan error, 1)
			_, err := runner.Execute(build(t, withBehavior("{type: extern, period: 100ms, timeout: 2s, connect_timeout: 120s}")), "", runner.Options{
				ExternReady: func(socket, addr, token string) { go fakeRelay(addr, token, c.killed, errs) }})
			if err == nil {
				t.Fatal("the run succeeded")
			}
			for _, w := range []string{`relay "fake relay" at 127.0.0.1:`, "(nodes 0-3)", c.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if e := <-errs; e != nil {
				t.Fatal(e)
			}
		})
	}
}

// TestFrozenRelayContinue: under on_failure: continue, a frozen relay's
// agents all fail at once with the relay's name (not each after its own
// timeout, as if each had hung), and the run goes on without them.
func TestFrozenRelayContinue(t *testing.T) {
	errs := make(chan error, 1)
	res, err := runner.Execute(build(t, withBehavior("{type: extern, period: 100ms, timeout: 2s, connect_timeout: 120s, on_failure: continue}")), "", runner.Options{
		ExternReady: func(socket, addr, token string) { go fakeRelay(addr, token, false, errs) }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("uav-%d", i)
		ag := res.Summary.Agents[name]["extern"].(map[string]any)
		if ag["dead"] != true || !strings.Contains(fmt.Sprint(ag["failure"]), `relay "fake relay" at 127.0.0.1:`) ||
			!strings.Contains(fmt.Sprint(ag["failure"]), "no answer for node 0 within 2s") {
			t.Errorf("%s: %v", name, ag)
		}
	}
	if e := <-errs; e != nil {
		t.Fatal(e)
	}
}
