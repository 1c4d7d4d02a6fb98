package extern

import (
	"bytes"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Limits on connections that have not authenticated yet, that is, not sent
// a hello with the run's token: anyone who can reach a listener can open
// them, so they are bounded in number, in size and in time before the token
// is checked, and their refusal changes nothing in the run.
const (
	// MaxHello is the most a server reads of a hello before it has checked
	// the token (4 KiB). A longer hello (a relay naming thousands of nodes)
	// must carry its token within its first MaxHello bytes; skyloop's
	// clients and relays write it third, after type and version.
	MaxHello = 4 << 10
	// HelloTimeout is the time a connection has from its acceptance to
	// a complete hello, TLS handshake included. A client sends its hello
	// as soon as it is connected (before any slow work), so this is a
	// bound on the network and on a loaded machine's scheduling, not on
	// an interpreter's start-up.
	HelloTimeout = 10 * time.Second
	// MaxUnauthenticated is the most connections a server or relay reads
	// at once before their hello (TLS handshake and hello): the next wait,
	// accepted but not read (no handshake, no buffer), and are read in
	// turn, host after host.
	MaxUnauthenticated = 256
	// MaxUnauthenticatedPerHost is the most of them from one remote host
	// (IP address) on a listener for other hosts (TLS): one host's
	// connections beyond it wait while other hosts' are read. A loopback
	// listener serves local agents only, which all share one address: it
	// has no per-host cap, only MaxUnauthenticated.
	MaxUnauthenticatedPerHost = 64
	// MaxWaiting is the most connections that wait to be read: beyond it,
	// a connection that would have to wait is refused at once. A
	// connection waits at most twice HelloTimeout (those ahead of it that
	// hold on are closed by then), then has HelloTimeout for its hello.
	MaxWaiting = 1024
)

// Reasons a connection is refused before authentication (Stranger.Reason),
// as the log and summary.json count them.
const (
	ReasonWrongToken = "wrong token"
	ReasonNoToken    = "no token"
	ReasonMalformed  = "malformed hello"
	ReasonTooLarge   = "hello too large"
	ReasonTimeout    = "no hello in time"
	ReasonClosed     = "closed before its hello"
	ReasonTLS        = "TLS handshake failed"
	ReasonPerHost    = "too many unauthenticated connections from one host"
	ReasonBusy       = "too many unauthenticated connections"
)

// Stranger is the error of a connection refused before authentication:
// the peer did not show the run's token, so the refusal changes nothing in
// the run (no agent fails because of it); it is logged and counted.
type Stranger struct {
	// Reason is one of the Reason constants.
	Reason string
	// Err says more (what was read, which limit).
	Err error
}

func (e *Stranger) Error() string {
	if e.Err == nil {
		return e.Reason
	}
	return e.Err.Error()
}

func (e *Stranger) Unwrap() error { return e.Err }

// Tells reports whether the peer is told why in an error frame: a hello
// that was read (a wrong token, none, a malformed or oversized frame), so
// that a misconfigured client learns it; not a peer that sent nothing in
// time, closed or failed its TLS handshake.
func (e *Stranger) Tells() bool {
	switch e.Reason {
	case ReasonTimeout, ReasonClosed, ReasonTLS, ReasonPerHost, ReasonBusy:
		return false
	}
	return true
}

func stranger(reason string, format string, args ...any) *Stranger {
	return &Stranger{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// ReadHello reads a connection's first frame with the limits of a peer
// that has not authenticated: at most MaxHello bytes are read before its
// token is compared with token (in constant time), the frame must be a
// JSON object with that token, and a longer frame is read only once the
// token matched. Any error before that is a *Stranger. The caller sets the
// connection's deadline (HelloTimeout) and checks the rest of the hello.
// Reading is unbuffered: nothing after the hello is consumed.
func ReadHello(r io.Reader, token string) (*Frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, readFailure(err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, stranger(ReasonTooLarge, "a first frame of %d bytes (%w)", n, ErrFrameTooLarge)
	}
	head := min(int(n), MaxHello)
	body := make([]byte, head)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, readFailure(err)
	}
	tok, err := helloToken(body)
	if err != nil {
		if int(n) > head {
			return nil, stranger(ReasonNoToken, "a hello of %d bytes without its token in the first %d bytes (%v)", n, MaxHello, err)
		}
		return nil, err
	}
	if !sameToken(tok, token) {
		return nil, stranger(ReasonWrongToken, "wrong token")
	}
	if int(n) > head {
		// Authenticated: the rest of a long hello may be read.
		body = append(body, make([]byte, int(n)-head)...)
		if _, err := io.ReadFull(r, body[head:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("reading the hello: %w", err)
		}
	}
	h, err := DecodeFrame(body)
	if err != nil {
		return nil, fmt.Errorf("reading the hello: %w", err)
	}
	if !sameToken(h.Token, token) { // a second "token" key
		return nil, stranger(ReasonWrongToken, "wrong token")
	}
	if h.Type != TypeHello {
		return nil, fmt.Errorf("the first frame must be a hello, got %q", h.Type)
	}
	return h, nil
}

// readFailure classifies an error reading a hello.
func readFailure(err error) error {
	var ne net.Error
	var re tls.RecordHeaderError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return stranger(ReasonTimeout, "no hello within %v", HelloTimeout)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
		return stranger(ReasonClosed, "the connection closed before its hello")
	case errors.As(err, &re) || strings.Contains(err.Error(), "tls:"):
		return stranger(ReasonTLS, "TLS: %w", err)
	}
	return stranger(ReasonClosed, "reading the hello: %w", err)
}

// helloToken finds the "token" member of the JSON object that b starts
// with (b may be cut short after it). Key names match as encoding/json
// matches them, case-insensitively.
func helloToken(b []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", stranger(ReasonMalformed, "the first frame is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		if strings.EqualFold(key, "token") {
			v, err := dec.Token()
			s, ok := v.(string)
			if err != nil || !ok {
				return "", stranger(ReasonMalformed, "the hello's token is not a string")
			}
			return s, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			break
		}
	}
	return "", stranger(ReasonNoToken, "no token")
}

func sameToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// Gate bounds the connections of a server's or relay's listeners that have
// not authenticated yet. It reads at most max of them at once, and at most
// perHost from one remote host on the listeners that ask for it (those for
// other hosts); a connection beyond either waits, accepted but unread, and
// the waiting ones are read in turn, host after host, each host's oldest
// first, so that a host holding its connections open delays only its own.
// At most maxWaiting wait; a connection that would have to wait beyond is
// refused, and one that waited longer than wait is refused when its turn
// comes.
type Gate struct {
	max, perHost, maxWaiting int
	wait                     time.Duration
	start                    func(c net.Conn, release func())
	refuse                   func(c net.Conn, err error)

	mu      sync.Mutex
	reading int
	waiting int
	hosts   map[string]*gateHost
	ring    []string // hosts with connections, in turn order
	next    int      // the ring's next host to read from
	closed  bool
}

// gateHost is one host's connections before their hello.
type gateHost struct {
	reading int
	limit   int
	queue   []waitingConn
}

type waitingConn struct {
	c     net.Conn
	since time.Time
}

// NewGate returns a gate with these limits. start begins reading an
// admitted connection (it must not block: it starts a goroutine) and is
// given the function to call once its hello is read or refused; refuse
// is told of a connection the gate refused and closed.
func NewGate(max, perHost, maxWaiting int, wait time.Duration, start func(c net.Conn, release func()), refuse func(c net.Conn, err error)) *Gate {
	return &Gate{max: max, perHost: perHost, maxWaiting: maxWaiting, wait: wait, start: start, refuse: refuse, hosts: map[string]*gateHost{}}
}

// gateAction is a start or a refusal decided under the gate's lock and
// carried out after it.
type gateAction struct {
	c   net.Conn
	key string
	err error
}

// Add admits an accepted connection: it is read at once when there is room,
// waits otherwise, or is refused when too many wait. perHost applies the
// per-host cap (a listener for other hosts).
func (g *Gate) Add(c net.Conn, perHost bool) {
	key, limit := "", g.max // a loopback listener's peers: one pool
	if perHost && g.perHost > 0 {
		key, limit = HostOf(c.RemoteAddr()), g.perHost
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		c.Close()
		return
	}
	h := g.hosts[key]
	if h == nil {
		h = &gateHost{limit: limit}
		g.hosts[key] = h
		g.ring = append(g.ring, key)
	}
	var acts []gateAction
	switch {
	case g.reading < g.max && h.reading < h.limit && len(h.queue) == 0:
		h.reading++
		g.reading++
		acts = append(acts, gateAction{c: c, key: key})
	default:
		if g.waiting >= g.maxWaiting {
			acts = g.expire(time.Now(), acts)
		}
		if g.waiting >= g.maxWaiting {
			err := stranger(ReasonBusy, "%d connections are already waiting for their turn to say hello (at most %d)", g.waiting, g.maxWaiting)
			if h.reading >= h.limit {
				err = stranger(ReasonPerHost, "%d connections from %s are being read and %d wait (at most %d and %d in all)", h.reading, key, g.waiting, h.limit, g.maxWaiting)
			}
			acts = append(acts, gateAction{c: c, err: err})
			g.drop(key)
		} else {
			h.queue = append(h.queue, waitingConn{c: c, since: time.Now()})
			g.waiting++
		}
	}
	g.mu.Unlock()
	g.act(acts)
}

// done is a started connection's release: its hello was read or refused.
func (g *Gate) done(key string) {
	g.mu.Lock()
	g.reading--
	if h := g.hosts[key]; h != nil {
		h.reading--
	}
	acts := g.dispatch(nil)
	g.drop(key)
	g.mu.Unlock()
	g.act(acts)
}

// tidy forgets the hosts of refused connections that have nothing left
// (g.mu held).
func (g *Gate) tidy(acts []gateAction) {
	for _, a := range acts {
		if a.err != nil {
			if a.c.RemoteAddr() != nil {
				g.drop(HostOf(a.c.RemoteAddr()))
			}
			g.drop("")
		}
	}
}

// dispatch starts waiting connections while there is room, taking hosts in
// turn (g.mu held).
func (g *Gate) dispatch(acts []gateAction) []gateAction {
	now := time.Now()
	for g.reading < g.max && g.waiting > 0 {
		started := false
		for i := 0; i < len(g.ring) && !started; i++ {
			k := (g.next + i) % len(g.ring)
			key := g.ring[k]
			h := g.hosts[key]
			for len(h.queue) > 0 && h.reading < h.limit {
				w := h.queue[0]
				h.queue[0] = waitingConn{}
				h.queue = h.queue[1:]
				g.waiting--
				if now.Sub(w.since) > g.wait {
					acts = append(acts, gateAction{c: w.c, err: stranger(ReasonTimeout, "waited %v for its turn to say hello", g.wait)})
					continue
				}
				h.reading++
				g.reading++
				acts = append(acts, gateAction{c: w.c, key: key})
				g.next = (k + 1) % len(g.ring)
				started = true
				break
			}
		}
		if !started {
			break
		}
	}
	g.tidy(acts)
	return acts
}

// expire refuses the waiting connections that waited too long (g.mu held).
func (g *Gate) expire(now time.Time, acts []gateAction) []gateAction {
	for _, h := range g.hosts {
		kept := h.queue[:0]
		for _, w := range h.queue {
			if now.Sub(w.since) > g.wait {
				acts = append(acts, gateAction{c: w.c, err: stranger(ReasonTimeout, "waited %v for its turn to say hello", g.wait)})
				g.waiting--
				continue
			}
			kept = append(kept, w)
		}
		clear(h.queue[len(kept):])
		h.queue = kept
	}
	g.tidy(acts)
	return acts
}

// drop forgets a host with no connection left (g.mu held).
func (g *Gate) drop(key string) {
	h := g.hosts[key]
	if h == nil || h.reading > 0 || len(h.queue) > 0 {
		return
	}
	delete(g.hosts, key)
	for i, k := range g.ring {
		if k == key {
			g.ring = append(g.ring[:i], g.ring[i+1:]...)
			if g.next > i {
				g.next--
			}
			break
		}
	}
	if len(g.ring) == 0 || g.next >= len(g.ring) {
		g.next = 0
	}
}

// act carries out starts and refusals, outside the lock.
func (g *Gate) act(acts []gateAction) {
	for _, a := range acts {
		if a.err != nil {
			a.c.Close()
			g.refuse(a.c, a.err)
			continue
		}
		key := a.key
		g.start(a.c, sync.OnceFunc(func() { g.done(key) }))
	}
}

// Close closes the waiting connections and refuses any later one; the
// connections being read are their readers' to close.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	var waiting []net.Conn
	for _, h := range g.hosts {
		for _, w := range h.queue {
			waiting = append(waiting, w.c)
		}
		h.queue = nil
	}
	g.waiting = 0
	g.mu.Unlock()
	for _, c := range waiting {
		c.Close()
	}
}

// Counts returns the connections being read and waiting.
func (g *Gate) Counts() (reading, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reading, g.waiting
}

// HostOf returns the host part of a peer's address: its IP address, or
// "local" for a Unix socket.
func HostOf(addr net.Addr) string {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.String()
	case *net.UnixAddr, nil:
		return "local"
	}
	if h, _, err := net.SplitHostPort(addr.String()); err == nil {
		return h
	}
	return addr.String()
}

// MaxReportedHosts bounds the hosts a refusal report names; the others are
// counted together under "other".
const MaxReportedHosts = 32

// RefusalReport is what summary.json says of the connections refused before
// authentication.
type RefusalReport struct {
	// Total counts them.
	Total int `json:"total"`
	// Reasons counts them by reason (the Reason constants).
	Reasons map[string]int `json:"reasons"`
	// Hosts counts them by remote host (IP address, "local" for the Unix
	// socket), for at most MaxReportedHosts hosts, the others under
	// "other".
	Hosts map[string]int `json:"hosts"`
	// Last is the last one, as logged.
	Last string `json:"last"`
}

// Refusals counts the connections a server or relay refused before
// authentication, and logs them: the first maxLoggedRefusals one by one,
// then one line every thousand.
type Refusals struct {
	mu sync.Mutex
	r  RefusalReport
}

// maxLoggedRefusals is how many refusals are logged one by one.
const maxLoggedRefusals = 20

// Add counts a refusal of a connection from addr and logs it on log (as
// who: "extern" or "relay").
func (rs *Refusals) Add(log *slog.Logger, who string, addr net.Addr, err error) {
	reason := ReasonClosed
	var s *Stranger
	if errors.As(err, &s) {
		reason = s.Reason
	}
	host := HostOf(addr)
	from := host
	if addr != nil && host != "local" {
		from = addr.String()
	}
	rs.mu.Lock()
	r := &rs.r
	if r.Reasons == nil {
		r.Reasons, r.Hosts = map[string]int{}, map[string]int{}
	}
	r.Total++
	r.Reasons[reason]++
	if _, ok := r.Hosts[host]; ok || len(r.Hosts) < MaxReportedHosts {
		r.Hosts[host]++
	} else {
		r.Hosts["other"]++
	}
	r.Last = fmt.Sprintf("%s: %v", from, err)
	n := r.Total
	rs.mu.Unlock()
	switch {
	case n <= maxLoggedRefusals:
		log.Warn(who+": connection refused before authentication (the run goes on)", "from", from, "reason", reason, "err", err)
	case n == maxLoggedRefusals+1 || n%1000 == 0:
		log.Warn(who+": connections refused before authentication (the run goes on); the run's summary counts them", "refused", n, "last", r.Last)
	}
}

// Report returns what was counted so far.
func (rs *Refusals) Report() RefusalReport {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.r
	r.Reasons, r.Hosts = clone(r.Reasons), clone(r.Hosts)
	return r
}

func clone(m map[string]int) map[string]int {
	if m == nil {
		return nil
	}
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// String sums the report up in one line: "3 (2 wrong token, 1 no token)
// from 10.0.0.7, 10.0.0.9".
func (r RefusalReport) String() string {
	if r.Total == 0 {
		return "none"
	}
	var reasons, hosts []string
	for k, v := range r.Reasons {
		reasons = append(reasons, fmt.Sprintf("%d %s", v, k))
	}
	for k := range r.Hosts {
		hosts = append(hosts, k)
	}
	sort.Strings(reasons)
	sort.Strings(hosts)
	return fmt.Sprintf("%d (%s) from %s", r.Total, strings.Join(reasons, ", "), strings.Join(hosts, ", "))
}
