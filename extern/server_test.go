package extern

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

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
			&Behavior{p: &Params{Timeout: sim.Second, ConnectTimeout: 300 * sim.Second, OnFailure: "abort"}})
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

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestReadHello: a hello is read as a stranger's until its token is
// checked: at most MaxHello bytes, its token within them; a long hello
// (a relay naming thousands of nodes) is read whole once its token matched.
func TestReadHello(t *testing.T) {
	const tok = "0123456789abcdef"
	ids := make([]int, 5000)
	for i := range ids {
		ids[i] = i
	}
	long, _ := AppendFrame(nil, &Frame{Type: TypeHello, Version: Version, Token: tok, Vehicles: ids, Batch: true})
	if len(long) < 4*MaxHello {
		t.Fatalf("the long hello has %d bytes", len(long))
	}
	late := frameBytes(`{"type":"hello","vehicles":[` + strings.Repeat("1,", MaxHello) + `1],"token":"` + tok + `"}`)
	wrongLong, _ := AppendFrame(nil, &Frame{Type: TypeHello, Version: Version, Token: "x" + tok, Vehicles: ids})
	huge := binary.BigEndian.AppendUint32(nil, MaxFrame+1)
	cases := []struct {
		name   string
		in     []byte
		reason string // "" = accepted; "-" = refused, not as a stranger's
		read   int    // bytes read at most
	}{
		{"long hello, token first", long, "", len(long)},
		{"token after the first 4 KiB", late, ReasonNoToken, 4 + MaxHello},
		{"long hello, wrong token", wrongLong, ReasonWrongToken, 4 + MaxHello},
		{"length beyond 1 MiB", append(huge, "{}"...), ReasonTooLarge, 4},
		{"version 99, no token", frameBytes(`{"type":"hello","version":99,"vehicles":[0]}`), ReasonNoToken, 100},
		{"token not a string", frameBytes(`{"type":"hello","token":7}`), ReasonMalformed, 100},
		{"not an object", frameBytes(`[1,2,3]`), ReasonMalformed, 100},
		{"token in another case", frameBytes(`{"type":"hello","version":1,"Token":"` + tok + `","vehicles":[1]}`), "", 100},
		{"a second token", frameBytes(`{"type":"hello","token":"` + tok + `","token":"x"}`), ReasonWrongToken, 100},
		{"cut short", frameBytes(`{"type":"hello","token":"` + tok + `"}`)[:20], ReasonClosed, 100},
		{"not a hello", frameBytes(`{"type":"done","token":"` + tok + `"}`), "-", 100},
		{"version 99 with the token", frameBytes(`{"type":"hello","version":99,"token":"` + tok + `"}`), "", 100},
	}
	for _, c := range cases {
		cr := &countingReader{r: bytes.NewReader(c.in)}
		h, err := ReadHello(cr, tok)
		var s *Stranger
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.reason == "-" && (err == nil || errors.As(err, &s)):
			t.Errorf("%s: %v, want a refusal after the token", c.name, err)
		case c.reason != "" && c.reason != "-" && (!errors.As(err, &s) || s.Reason != c.reason):
			t.Errorf("%s: %v, want a stranger's refusal (%s)", c.name, err, c.reason)
		case cr.n > c.read:
			t.Errorf("%s: read %d bytes, at most %d before the token", c.name, cr.n, c.read)
		}
		if c.name == "long hello, token first" && (h == nil || len(h.Vehicles) != len(ids) || !h.Batch) {
			t.Errorf("%s: got %v", c.name, h)
		}
	}
}

func frameBytes(body string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestUnauthenticatedWait: at most MaxUnauthenticated connections are
// read at once before their hello, the others wait unread; a stranger that
// sends no hello is closed at HelloTimeout (and counted); an agent waiting
// behind strangers gets in when they are gone.
func TestUnauthenticatedWait(t *testing.T) {
	const max = 4
	ready := make(chan [2]string, 1)
	s := NewServer(Config{Tick: int64(sim.Millisecond), Nodes: []agent.NodeRef{{ID: 0, Name: "a-0"}},
		Vehicle: func(int) bool { return true }, Ready: func(socket, addr, token string) { ready <- [2]string{addr, token} },
		MaxUnauthenticated: max, HelloTimeout: 3 * time.Second})
	s.Add(agent.NodeRef{ID: 0, Name: "a-0"}, &Behavior{p: &Params{Timeout: sim.Second, ConnectTimeout: 300 * sim.Second, OnFailure: "abort"}})
	started := make(chan error, 1)
	go func() { started <- s.Start() }()
	defer s.Stop("test over")
	r := <-ready
	var strangers []net.Conn
	defer func() {
		for _, c := range strangers {
			c.Close()
		}
	}()
	waitCounts := func(reading, waiting int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			rd, wt := s.gate.Counts()
			if rd == reading && wt == waiting {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d connections read and %d waiting, want %d and %d", rd, wt, reading, waiting)
			}
		}
	}
	for i := 0; i < max+2; i++ {
		c, err := net.Dial("tcp", r[0])
		if err != nil {
			t.Fatal(err)
		}
		c.Write(frameBytes(`{"type":"hello","vehicles":[0]`)[:20]) // unfinished
		strangers = append(strangers, c)
	}
	waitCounts(max, 2)
	// The agent waits behind them, and joins once the first are gone.
	c, err := net.Dial("tcp", r[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := AppendFrame(nil, &Frame{Type: TypeHello, Version: Version, Token: r[1], Vehicles: []int{0}})
	c.Write(b)
	waitCounts(max, 3)
	var buf []byte
	f, err := ReadFrame(bufio.NewReader(c), &buf)
	if err != nil || f.Type != TypeWelcome {
		t.Fatalf("the agent got %v, %v", f, err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	s.Stop("test over") // every connection's reader has returned
	if r := s.Refused(); r.Total != max+2 || r.Reasons[ReasonTimeout] < 3 {
		t.Errorf("refused %s; want the %d strangers, those ahead of the agent at their hello timeout", r, max+2)
	}
}

// fakeConn is a connection from addr that only records its closing.
type fakeConn struct {
	net.Conn
	addr   net.Addr
	closed bool
}

func (f *fakeConn) RemoteAddr() net.Addr { return f.addr }
func (f *fakeConn) Close() error         { f.closed = true; return nil }

// TestGate: the gate reads at most max connections and perHost from one
// host, lets the others wait and reads them host after host, each host's
// oldest first; it refuses beyond maxWaiting, and those that waited too
// long.
func TestGate(t *testing.T) {
	var started []*fakeConn
	releases := map[*fakeConn]func(){}
	var refused []string
	g := NewGate(4, 2, 3, time.Hour, func(c net.Conn, release func()) {
		started = append(started, c.(*fakeConn))
		releases[c.(*fakeConn)] = release
	}, func(c net.Conn, err error) {
		var s *Stranger
		errors.As(err, &s)
		refused = append(refused, c.RemoteAddr().String()+" "+s.Reason)
	})
	conns := map[string]*fakeConn{}
	add := func(name string, ip byte, port int) {
		c := &fakeConn{addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, ip), Port: port}}
		conns[name] = c
		g.Add(c, true)
	}
	names := func() string {
		var s []string
		for _, c := range started {
			for n, d := range conns {
				if c == d {
					s = append(s, n)
				}
			}
		}
		return strings.Join(s, " ")
	}
	check := func(wantStarted string, reading, waiting int) {
		t.Helper()
		r, w := g.Counts()
		if got := names(); got != wantStarted || r != reading || w != waiting {
			t.Fatalf("started %q, %d reading, %d waiting; want %q, %d, %d", got, r, w, wantStarted, reading, waiting)
		}
	}
	add("A1", 1, 1)
	add("A2", 1, 2)
	add("A3", 1, 3) // host A is at its cap: waits
	add("B1", 2, 1)
	add("B2", 2, 2)
	check("A1 A2 B1 B2", 4, 1)
	add("C1", 3, 1) // all read: waits
	add("A4", 1, 4)
	check("A1 A2 B1 B2", 4, 3)
	add("C2", 3, 2) // nowhere to wait
	if len(refused) != 1 || refused[0] != "10.0.0.3:2 "+ReasonBusy || !conns["C2"].closed {
		t.Fatalf("refused %q", refused)
	}
	releases[conns["A1"]]()
	check("A1 A2 B1 B2 A3", 4, 2) // A's oldest
	releases[conns["B1"]]()
	check("A1 A2 B1 B2 A3 C1", 4, 1) // then the next host's
	releases[conns["B1"]]()          // a second release changes nothing
	check("A1 A2 B1 B2 A3 C1", 4, 1)
	releases[conns["B2"]]()
	check("A1 A2 B1 B2 A3 C1", 3, 1) // A4 waits for A's cap
	releases[conns["A2"]]()
	check("A1 A2 B1 B2 A3 C1 A4", 3, 0)
	add("A5", 1, 5)
	add("A6", 1, 6)
	add("A7", 1, 7)
	add("A8", 1, 8) // host A at its cap, and 3 waiting: refused
	if len(refused) != 2 || refused[1] != "10.0.0.1:8 "+ReasonPerHost {
		t.Fatalf("refused %q", refused)
	}
	g.Close()
	if !conns["A5"].closed || !conns["A7"].closed || conns["A3"].closed {
		t.Fatal("Close closed the wrong connections")
	}
	// A connection that waited too long is refused when its turn comes.
	refused = nil
	g = NewGate(1, 1, 10, 0, func(c net.Conn, release func()) { releases[c.(*fakeConn)] = release }, func(c net.Conn, err error) {
		var s *Stranger
		errors.As(err, &s)
		refused = append(refused, c.RemoteAddr().String()+" "+s.Reason)
	})
	add("X1", 9, 1)
	add("X2", 9, 2)
	time.Sleep(time.Millisecond)
	releases[conns["X1"]]()
	if len(refused) != 1 || refused[0] != "10.0.0.9:2 "+ReasonTimeout {
		t.Fatalf("refused %q", refused)
	}
	if r, w := g.Counts(); r != 0 || w != 0 || len(g.hosts) != 0 || len(g.ring) != 0 {
		t.Fatalf("%d reading, %d waiting, hosts %v left", r, w, g.ring)
	}
}
