package extern

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"skyloop/agent"
	"skyloop/netsim"
	"skyloop/sim"
)

// TestRefusedHelloSparesConnectedAgent: a second hello for a node that is
// already connected is refused without failing the node's agent, and the
// other agents still connect.
func TestRefusedHelloSparesConnectedAgent(t *testing.T) {
	ready := make(chan [2]string, 1)
	s := NewServer(Config{Tick: int64(sim.Millisecond), Nodes: []agent.NodeRef{{ID: 0, Name: "a-0"}, {ID: 1, Name: "a-1"}},
		Vehicle: func(int) bool { return true }, Ready: func(socket, addr, token string) { ready <- [2]string{socket, token} }})
	for i := 0; i < 2; i++ {
		s.Add(agent.NodeRef{ID: netsim.NodeID(i), Name: []string{"a-0", "a-1"}[i]},
			&Behavior{p: &Params{Timeout: sim.Second, ConnectTimeout: 20 * sim.Second, OnFailure: "abort"}})
	}
	started := make(chan error, 1)
	go func() { started <- s.Start() }()
	defer s.Stop("test over")
	r := <-ready
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	hello := func(ids ...int) *Frame {
		c, err := net.Dial("unix", r[0])
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		b, _ := AppendFrame(nil, &Frame{Type: TypeHello, Version: Version, Token: r[1], Vehicles: ids})
		c.Write(b)
		var buf []byte
		f, err := ReadFrame(bufio.NewReader(c), &buf)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := hello(0); f.Type != TypeWelcome {
		t.Fatalf("first hello: %s %q", f.Type, f.Reason)
	}
	if f := hello(0); f.Type != TypeError || !strings.Contains(f.Reason, "already connected") {
		t.Fatalf("second hello for node 0: %s %q", f.Type, f.Reason)
	}
	if f := hello(1); f.Type != TypeWelcome {
		t.Fatalf("hello for node 1: %s %q", f.Type, f.Reason)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if a := s.agents[0]; a.err != nil {
		t.Fatalf("the connected agent failed: %v", a.err)
	}
}
