// Package relay is SPEC.md B's synchronisation tree across machines: a
// relay runs on a host with external agents, which connect to it as if it
// were skyloop; the relay joins the run with one connection for all of
// them, receives each round's ticks in one batch frame, fans them out,
// gathers the agents' answers and sends them upstream in one batch frame
// when every agent of the round is done. The coordinator thus exchanges
// one message each way per host and round instead of one per agent.
// Relays chain: a relay's upstream may be another relay.
//
// The relay changes no result: the server applies each agent's frames in
// the order the agent sent them and steps agents in node order, whichever
// way the frames travelled.
package relay

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"skyloop/extern"
)

// Config is what a relay needs.
type Config struct {
	// Upstream is skyloop's remote address (skyloop run --listen) or
	// another relay's.
	Upstream string
	// Fingerprint pins the upstream's TLS certificate; without it the
	// upstream must be on loopback.
	Fingerprint string
	// Token is the run's token; local agents must present it too.
	Token string
	// Vehicles are the node ids whose agents connect here.
	Vehicles []int
	// Listen is where local agents (or relays below) connect: plain TCP
	// on a loopback address, TLS with a certificate made for the relay on
	// any other.
	Listen string
	// Name names the relay in messages upstream.
	Name string
	// ConnectTimeout bounds the wait for every local agent, and for the
	// upstream's welcome.
	ConnectTimeout time.Duration
	// StepTimeout bounds, in wall-clock time, how long a round waits for
	// the local agents' answers (default 10 s, the extern behaviour's
	// default timeout): agents that have not answered by then fail, so
	// that one hung agent does not hold up the others behind the relay.
	StepTimeout time.Duration
	// Ready, when set, is told where local agents connect and the TLS
	// fingerprint ("" on loopback) once the relay listens.
	Ready func(addr, fingerprint string)
	Log   *slog.Logger
}

// Stats count what the relay carried.
type Stats struct {
	// Rounds is the number of batches sent upstream.
	Rounds int
	// Down and Up count the frames fanned out to and gathered from the
	// local agents.
	Down, Up int
	// Refused counts the local connections refused before authentication
	// (no hello with the run's token).
	Refused extern.RefusalReport
}

// DefaultConnectTimeout is the relay's default wait for its local agents
// and for the upstream's welcome (skyloop relay --connect-timeout): as long
// as the connect_timeout the remote example gives the run, so that neither
// side gives up on a start-up the other still waits for.
const DefaultConnectTimeout = 2 * time.Minute

// MaxNodes is the most nodes a relay serves, and MaxNodeID the largest
// node id it accepts: as many as a scenario may have vehicles
// (scenario.MaxVehicles). Lists are checked against them before anything
// is allocated.
const (
	MaxNodes  = 100_000
	MaxNodeID = MaxNodes - 1
)

// local is one connection of a local agent (or of a relay below).
type local struct {
	c        net.Conn
	name     string
	vehicles []int
	batch    bool
	bat      extern.Batcher
	wbuf     []byte
}

func (l *local) describe() string {
	return fmt.Sprintf("local agent %q at %s (nodes %v)", l.name, l.c.RemoteAddr(), l.vehicles)
}

// event is a frame from a connection, or its end.
type event struct {
	from *local // nil: upstream
	f    *extern.Frame
	err  error
}

// Run serves one run: it waits for every local agent, joins upstream and
// relays until the run ends (nil) or fails (an error naming the peer at
// fault). Cancelling ctx stops it.
func Run(ctx context.Context, cfg Config) (st Stats, err error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = 10 * time.Second
	}
	if len(cfg.Vehicles) == 0 {
		return st, errors.New("relay: no vehicles to serve (--vehicles)")
	}
	if len(cfg.Vehicles) > MaxNodes {
		return st, fmt.Errorf("relay: %d vehicles to serve: at most %d", len(cfg.Vehicles), MaxNodes)
	}
	want := make(map[int]bool, len(cfg.Vehicles))
	for _, v := range cfg.Vehicles {
		if v < 0 || v > MaxNodeID {
			return st, fmt.Errorf("relay: vehicle %d: node ids are 0 to %d", v, MaxNodeID)
		}
		if want[v] {
			return st, fmt.Errorf("relay: vehicle %d listed twice", v)
		}
		want[v] = true
	}
	ln, finger, err := listen(cfg.Listen)
	if err != nil {
		return st, err
	}
	defer ln.Close()
	var strangers extern.Refusals // connections refused before authentication
	defer func() { st.Refused = strangers.Report() }()
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String(), finger)
	}
	cfg.Log.Info("relay listening", "addr", ln.Addr().String(), "fingerprint", finger, "vehicles", len(cfg.Vehicles))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan event, 256)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var locals []*local
	pending := map[net.Conn]bool{} // connections before their hello
	closing := false
	var gate *extern.Gate
	defer func() {
		cancel()
		ln.Close()
		if gate != nil {
			gate.Close()
		}
		mu.Lock()
		closing = true
		for _, l := range locals {
			l.c.Close()
		}
		for c := range pending {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()

	// Accept local agents until every vehicle has one.
	owner := map[int]*local{}
	joined := make(chan *local)
	refusals := make(chan error, 16)
	// A connection is a stranger's until its hello shows the token: the
	// gate bounds them (in all, and per host on a TLS listener for other
	// hosts), hello bounds each in size and time, and their refusals are
	// counted.
	startHello := func(c net.Conn, release func()) {
		mu.Lock()
		if closing {
			mu.Unlock()
			c.Close()
			release()
			return
		}
		pending[c] = true
		wg.Add(1)
		mu.Unlock()
		go func() {
			defer wg.Done()
			l, err := hello(c, cfg.Token)
			mu.Lock()
			delete(pending, c)
			mu.Unlock()
			if err != nil {
				var s *extern.Stranger
				if !errors.As(err, &s) || s.Tells() {
					writeFrame(c, &extern.Frame{Type: extern.TypeError, Reason: err.Error()})
				}
				if s != nil {
					strangers.Add(cfg.Log, "relay", c.RemoteAddr(), err)
				}
				c.Close()
				release() // after the answer: the gate bounds these goroutines too
				select {
				case refusals <- err:
				default:
				}
				return
			}
			release()
			select {
			case joined <- l:
			case <-ctx.Done():
				c.Close()
			}
		}()
	}
	gate = extern.NewGate(extern.MaxUnauthenticated, extern.MaxUnauthenticatedPerHost, extern.MaxWaiting, 2*extern.HelloTimeout, startHello,
		func(c net.Conn, err error) { strangers.Add(cfg.Log, "relay", c.RemoteAddr(), err) })
	perHost := finger != ""
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
					return
				}
				cfg.Log.Warn("relay: accepting a connection", "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			gate.Add(c, perHost)
		}
	}()
	deadline := time.NewTimer(cfg.ConnectTimeout)
	defer deadline.Stop()
	lastRefusal := ""
	for len(owner) < len(want) {
		select {
		case l := <-joined:
			var bad error
			for _, v := range l.vehicles {
				switch {
				case !want[v]:
					bad = fmt.Errorf("node %d is not served by this relay (--vehicles %s)", v, FormatList(cfg.Vehicles))
				case owner[v] != nil:
					bad = fmt.Errorf("node %d is already connected (%s)", v, owner[v].name)
				}
			}
			if bad != nil {
				writeFrame(l.c, &extern.Frame{Type: extern.TypeError, Reason: bad.Error()})
				l.c.Close()
				lastRefusal = bad.Error()
				cfg.Log.Warn("relay: agent refused", "from", l.c.RemoteAddr().String(), "err", bad)
				continue
			}
			for _, v := range l.vehicles {
				owner[v] = l
			}
			cfg.Log.Info("relay: agent connected", "agent", l.name, "nodes", FormatList(l.vehicles), "connected", len(owner), "of", len(want))
			mu.Lock()
			locals = append(locals, l)
			mu.Unlock()
		case err := <-refusals:
			lastRefusal = err.Error()
			if _, ok := err.(*extern.Stranger); !ok { // strangers are logged as counted
				cfg.Log.Warn("relay: agent refused", "err", err)
			}
		case <-deadline.C:
			var missing []int
			for _, v := range cfg.Vehicles {
				if owner[v] == nil {
					missing = append(missing, v)
				}
			}
			msg := fmt.Sprintf("relay: nodes %s did not connect within %v", FormatList(missing), cfg.ConnectTimeout)
			if lastRefusal != "" {
				msg += "; the last connection refused: " + lastRefusal
			}
			err := errors.New(msg)
			failLocals(locals, err)
			return st, err
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}

	// Late or extra connections are refused from now on.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case l := <-joined:
				writeFrame(l.c, &extern.Frame{Type: extern.TypeError, Reason: fmt.Sprintf("every node of this relay (%s) is already connected", FormatList(cfg.Vehicles))})
				l.c.Close()
			case <-ctx.Done():
				return
			}
		}
	}()

	// Join upstream for all of them.
	up, err := extern.Dial(cfg.Upstream, cfg.Fingerprint, cfg.ConnectTimeout)
	if err != nil {
		err = fmt.Errorf("relay: upstream %s: %w", cfg.Upstream, err)
		failLocals(locals, err)
		return st, err
	}
	defer up.Close()
	ids := slices.Clone(cfg.Vehicles)
	sort.Ints(ids)
	name := cfg.Name
	if name == "" {
		name = "relay"
	}
	if len(name) > 64 {
		name = name[:64]
	}
	if err := writeFrame(up, &extern.Frame{Type: extern.TypeHello, Version: extern.Version, Token: cfg.Token, Vehicles: ids, Name: name, Batch: true}); err != nil {
		err = fmt.Errorf("relay: upstream %s: sending the hello: %w", cfg.Upstream, err)
		failLocals(locals, err)
		return st, err
	}
	ur := bufio.NewReaderSize(up, 64<<10)
	var ubuf []byte
	up.SetReadDeadline(time.Now().Add(cfg.ConnectTimeout))
	w, err := extern.ReadFrame(ur, &ubuf)
	if err == nil && w.Type == extern.TypeError {
		err = fmt.Errorf("refused: %s", w.Reason)
	} else if err == nil && w.Type != extern.TypeWelcome {
		err = fmt.Errorf("expected a welcome, got %q", w.Type)
	}
	if err != nil {
		err = fmt.Errorf("relay: upstream %s: %w", cfg.Upstream, err)
		failLocals(locals, err)
		return st, err
	}
	up.SetReadDeadline(time.Time{})
	for _, l := range locals {
		lw := *w
		lw.Vehicles = l.vehicles
		if err := writeFrame(l.c, &lw); err != nil {
			err = fmt.Errorf("relay: %s: sending the welcome: %w", l.describe(), err)
			failLocals(locals, err)
			return st, err
		}
	}
	cfg.Log.Info("relay joined the run", "upstream", cfg.Upstream, "agents", len(locals), "vehicles", len(ids))

	// Readers.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			f, err := extern.ReadFrame(ur, &ubuf)
			select {
			case events <- event{f: f, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for _, l := range locals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := bufio.NewReaderSize(l.c, 64<<10)
			var buf []byte
			for {
				f, err := extern.ReadFrame(r, &buf)
				select {
				case events <- event{from: l, f: f, err: err}:
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}

	// The relay loop.
	var upBat extern.Batcher
	outstanding := map[int]bool{}
	sent := map[int]stepCount{} // what each outstanding node sent in its step
	dead := map[int]string{}
	roundTimer := time.NewTimer(time.Hour)
	roundTimer.Stop()
	defer roundTimer.Stop()
	answer := func(v int, f *extern.Frame) error {
		st.Up++
		if err := upBat.Add(f); err != nil {
			return err
		}
		if f.Type == extern.TypeDone || f.Type == extern.TypeError {
			delete(outstanding, v)
		}
		return nil
	}
	flushUp := func() error {
		if len(outstanding) > 0 || !upBat.Pending() {
			return nil
		}
		st.Rounds++
		roundTimer.Stop()
		up.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := up.Write(upBat.Take()); err != nil {
			return fmt.Errorf("relay: upstream %s: %w", cfg.Upstream, err)
		}
		return nil
	}
	for {
		var ev event
		select {
		case ev = <-events:
		case <-roundTimer.C:
			// Agents that did not answer in time fail; the others' answers
			// go upstream.
			hung := map[*local]bool{}
			for v := range outstanding {
				hung[owner[v]] = true
			}
			for _, l := range locals {
				if hung[l] {
					if err := kill(l, fmt.Errorf("no END-TICK within %v of wall-clock time (hung?)", cfg.StepTimeout), dead, outstanding, answer); err != nil {
						return st, err
					}
				}
			}
			if err := flushUp(); err != nil {
				return st, err
			}
			continue
		case <-ctx.Done():
			return st, ctx.Err()
		}
		if ev.from == nil {
			if ev.err != nil {
				err := fmt.Errorf("relay: upstream %s: %w", cfg.Upstream, ev.err)
				if errors.Is(ev.err, io.EOF) {
					err = fmt.Errorf("relay: upstream %s closed the connection without ending the run", cfg.Upstream)
				}
				failLocals(locals, err)
				return st, err
			}
			switch ev.f.Type {
			case extern.TypeEnd, extern.TypeError:
				for _, l := range locals {
					writeFrame(l.c, ev.f)
				}
				if ev.f.Type == extern.TypeError {
					return st, fmt.Errorf("relay: upstream %s: %s", cfg.Upstream, ev.f.Reason)
				}
				if ev.f.Failed {
					return st, fmt.Errorf("relay: the run failed (upstream %s): %s", cfg.Upstream, ev.f.Reason)
				}
				return st, nil
			case extern.TypeBatch:
			default:
				err := fmt.Errorf("relay: upstream %s: protocol error: a %s frame (want batch, end or error)", cfg.Upstream, ev.f.Type)
				failLocals(locals, err)
				return st, err
			}
			var touched []*local
			for i := range ev.f.Frames {
				f := &ev.f.Frames[i]
				l := owner[f.Vehicle]
				if f.Type != extern.TypeTick || l == nil {
					err := fmt.Errorf("relay: upstream %s: protocol error: a %s frame for node %d in a batch (want ticks for nodes %s)",
						cfg.Upstream, f.Type, f.Vehicle, FormatList(cfg.Vehicles))
					failLocals(locals, err)
					return st, err
				}
				if why, ok := dead[f.Vehicle]; ok {
					if err := answer(f.Vehicle, &extern.Frame{Type: extern.TypeError, Vehicle: f.Vehicle, Reason: why}); err != nil {
						return st, err
					}
					continue
				}
				if outstanding[f.Vehicle] {
					err := fmt.Errorf("relay: upstream %s: protocol error: a tick for node %d before its last step ended", cfg.Upstream, f.Vehicle)
					failLocals(locals, err)
					return st, err
				}
				outstanding[f.Vehicle] = true
				sent[f.Vehicle] = stepCount{}
				st.Down++
				var err error
				if l.batch {
					err = l.bat.Add(f)
				} else {
					l.wbuf, err = extern.AppendFrame(l.wbuf, f)
				}
				if err != nil {
					return st, fmt.Errorf("relay: %w", err)
				}
				if !slices.Contains(touched, l) {
					touched = append(touched, l)
				}
			}
			for _, l := range touched {
				b := l.wbuf
				if l.batch {
					b = l.bat.Take()
				}
				l.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
				_, err := l.c.Write(b)
				l.wbuf = l.wbuf[:0]
				if err != nil {
					if err := kill(l, fmt.Errorf("sending ticks: %w", err), dead, outstanding, answer); err != nil {
						return st, err
					}
				}
			}
			if len(outstanding) > 0 {
				roundTimer.Reset(cfg.StepTimeout)
			}
			if err := flushUp(); err != nil {
				return st, err
			}
			continue
		}
		l := ev.from
		if _, gone := dead[l.vehicles[0]]; gone {
			continue
		}
		if ev.err != nil {
			why := fmt.Errorf("protocol error: %w", ev.err)
			if errors.Is(ev.err, io.EOF) || errors.Is(ev.err, syscall.ECONNRESET) {
				why = errors.New("connection closed by the agent")
			}
			if err := kill(l, why, dead, outstanding, answer); err != nil {
				return st, err
			}
			if err := flushUp(); err != nil {
				return st, err
			}
			continue
		}
		frames := []*extern.Frame{ev.f}
		if ev.f.Type == extern.TypeBatch {
			if !l.batch {
				frames = nil
				if err := kill(l, errors.New("protocol error: a batch frame from an agent whose hello did not ask for batches"), dead, outstanding, answer); err != nil {
					return st, err
				}
			} else {
				frames = frames[:0]
				for i := range ev.f.Frames {
					frames = append(frames, &ev.f.Frames[i])
				}
			}
		}
		for _, f := range frames {
			var bad error
			switch {
			case !slices.Contains(l.vehicles, f.Vehicle):
				bad = fmt.Errorf("protocol error: a %s frame for node %d, which this connection does not step", f.Type, f.Vehicle)
			case f.Type == extern.TypeTick || f.Type == extern.TypeHello || f.Type == extern.TypeBatch:
				bad = fmt.Errorf("protocol error: a %s frame from an agent", f.Type)
			case !outstanding[f.Vehicle]:
				bad = fmt.Errorf("protocol error: a %s frame for node %d outside its step", f.Type, f.Vehicle)
			default:
				// The server's bounds of one step (extern.MaxStepFrames,
				// MaxStepBytes), checked here, where the agent is known.
				c := sent[f.Vehicle]
				c.frames++
				c.bytes += f.Footprint()
				sent[f.Vehicle] = c
				if c.frames > extern.MaxStepFrames {
					bad = fmt.Errorf("protocol error: node %d sent more than %d frames in one step (at most %d per step)", f.Vehicle, extern.MaxStepFrames, extern.MaxStepFrames)
				} else if c.bytes > extern.MaxStepBytes {
					bad = fmt.Errorf("protocol error: node %d sent more than %d MiB in one step (at most %d MiB per step)", f.Vehicle, extern.MaxStepBytes>>20, extern.MaxStepBytes>>20)
				}
			}
			if bad != nil {
				if err := kill(l, bad, dead, outstanding, answer); err != nil {
					return st, err
				}
				break
			}
			if err := answer(f.Vehicle, f); err != nil {
				return st, fmt.Errorf("relay: %s: %w", l.describe(), err)
			}
		}
		if err := flushUp(); err != nil {
			return st, err
		}
	}
}

// stepCount is what a node sent in its step.
type stepCount struct{ frames, bytes int }

// kill marks a local connection's vehicles dead: the steps they owe are
// answered with an error frame that fails just those agents upstream (as
// if they had failed on a direct connection), and so are their later
// ticks.
func kill(l *local, why error, dead map[int]string, outstanding map[int]bool, answer func(int, *extern.Frame) error) error {
	reason := "via relay: " + why.Error()
	l.c.Close()
	for _, v := range l.vehicles {
		dead[v] = reason
		if outstanding[v] {
			if err := answer(v, &extern.Frame{Type: extern.TypeError, Vehicle: v, Reason: reason}); err != nil {
				return err
			}
		}
	}
	return nil
}

// hello reads and checks a local agent's hello: as a stranger's until its
// token is checked (extern.ReadHello: bounded in size and time; an
// *extern.Stranger error), then as the agent's.
func hello(c net.Conn, token string) (*local, error) {
	c.SetDeadline(time.Now().Add(extern.HelloTimeout))
	defer c.SetDeadline(time.Time{})
	h, err := extern.ReadHello(c, token)
	if err != nil {
		return nil, err
	}
	switch {
	case h.Version != extern.Version:
		return nil, fmt.Errorf("protocol version %d not served (this relay speaks version %d)", h.Version, extern.Version)
	case h.Role != 0:
		return nil, fmt.Errorf("role %d not served by a relay: only mission logic (role 0) connects through one", h.Role)
	case len(h.Vehicles) == 0:
		return nil, errors.New("hello names no vehicles")
	case len(h.Name) > 64:
		return nil, fmt.Errorf("a name of %d bytes (at most 64)", len(h.Name))
	}
	seen := map[int]bool{}
	for _, v := range h.Vehicles {
		if seen[v] {
			return nil, fmt.Errorf("hello names node %d twice", v)
		}
		seen[v] = true
	}
	name := h.Name
	if name == "" {
		name = c.RemoteAddr().String()
	}
	return &local{c: c, name: name, vehicles: slices.Clone(h.Vehicles), batch: h.Batch}, nil
}

// listen opens the relay's local listener: plain on loopback, TLS with a
// fresh certificate elsewhere.
func listen(addr string) (net.Listener, string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("relay: --listen %q: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("relay: listening on %s: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return ln, "", nil
	}
	cert, finger, err := extern.NewCertificate()
	if err != nil {
		ln.Close()
		return nil, "", fmt.Errorf("relay: %w", err)
	}
	return tlsListener(ln, cert), finger, nil
}

func writeFrame(c net.Conn, f *extern.Frame) error {
	b, err := extern.AppendFrame(nil, f)
	if err != nil {
		return err
	}
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Write(b)
	return err
}

// failLocals tells every local agent why the relay stops.
func failLocals(ls []*local, err error) {
	for _, l := range ls {
		writeFrame(l.c, &extern.Frame{Type: extern.TypeError, Reason: err.Error()})
	}
}

// ParseList reads node ids as "0-24,30,32-33". Ids are 0 to MaxNodeID,
// each listed once, checked before anything is allocated for them.
func ParseList(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("node list %.60q: %q is not a node id or a range like 0-24", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("node list %.60q: %q is not a range like 0-24", s, part)
			}
		}
		if b > MaxNodeID {
			return nil, fmt.Errorf("node list %.60q: %q: node ids are 0 to %d (a run has at most %d vehicles)", s, part, MaxNodeID, MaxNodes)
		}
		for v := a; v <= b; v++ {
			if seen[v] {
				return nil, fmt.Errorf("node list %.60q: node %d twice", s, v)
			}
			seen[v] = true
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("node list %.60q names no nodes", s)
	}
	return out, nil
}

// FormatList writes node ids as ParseList reads them, ranges merged.
func FormatList(ids []int) string { return extern.FormatNodes(ids) }

func tlsListener(ln net.Listener, cert tls.Certificate) net.Listener {
	return tls.NewListener(ln, extern.ServerTLS(cert))
}
