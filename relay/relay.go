// Package relay is the synchronisation tree across machines (docs/remote.md): a
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
	cfg, want, err := settle(cfg)
	if err != nil {
		return st, err
	}
	ln, finger, err := listen(cfg.Listen)
	if err != nil {
		return st, err
	}
	defer ln.Close()
	r := &relay{
		cfg:         cfg,
		want:        want,
		ln:          ln,
		events:      make(chan event, 256),
		pending:     map[net.Conn]bool{},
		owner:       map[int]*local{},
		joined:      make(chan *local),
		refusals:    make(chan error, 16),
		outstanding: map[int]bool{},
		sent:        map[int]stepCount{},
		dead:        map[int]string{},
	}
	// Runs last, once every goroutine is done (shutdown waits for them).
	defer func() { st = r.st; st.Refused = r.strangers.Report() }()
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String(), finger)
	}
	cfg.Log.Info("relay listening", "addr", ln.Addr().String(), "fingerprint", finger, "vehicles", len(cfg.Vehicles))

	r.ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	defer r.shutdown()
	r.accept(finger != "")
	if err := r.awaitLocals(); err != nil {
		return r.st, err
	}
	r.refuseLate()
	if err := r.joinUpstream(); err != nil {
		return r.st, err
	}
	defer r.up.Close()
	r.startReaders()
	err = r.loop()
	return r.st, err
}

// settle checks cfg's vehicle list and fills in its defaults; it returns
// the set of vehicles to serve.
func settle(cfg Config) (Config, map[int]bool, error) {
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
		return cfg, nil, errors.New("relay: no vehicles to serve (--vehicles)")
	}
	if len(cfg.Vehicles) > MaxNodes {
		return cfg, nil, fmt.Errorf("relay: %d vehicles to serve: at most %d", len(cfg.Vehicles), MaxNodes)
	}
	want := make(map[int]bool, len(cfg.Vehicles))
	for _, v := range cfg.Vehicles {
		if v < 0 || v > MaxNodeID {
			return cfg, nil, fmt.Errorf("relay: vehicle %d: node ids are 0 to %d", v, MaxNodeID)
		}
		if want[v] {
			return cfg, nil, fmt.Errorf("relay: vehicle %d listed twice", v)
		}
		want[v] = true
	}
	return cfg, want, nil
}

// relay is the state of one Run.
type relay struct {
	cfg  Config
	want map[int]bool // the vehicles served
	st   Stats
	ctx  context.Context
	// cancel stops every goroutine of the relay.
	cancel context.CancelFunc
	ln     net.Listener
	events chan event
	wg     sync.WaitGroup

	// mu guards locals (while agents connect), pending and closing.
	mu        sync.Mutex
	locals    []*local
	pending   map[net.Conn]bool // connections before their hello
	closing   bool
	gate      *extern.Gate
	strangers extern.Refusals // connections refused before authentication

	owner    map[int]*local // each vehicle's connection
	joined   chan *local    // authenticated local connections
	refusals chan error     // why connections were refused

	up   net.Conn
	ur   *bufio.Reader
	ubuf []byte

	// The relay loop's state.
	upBat       extern.Batcher    // the answers going upstream this round
	outstanding map[int]bool      // nodes whose step has not ended
	sent        map[int]stepCount // what each outstanding node sent in its step
	dead        map[int]string    // nodes whose connection failed, and why
	roundTimer  *time.Timer       // the round's StepTimeout
}

// shutdown stops the listener, the gate and every connection, and waits
// for the relay's goroutines.
func (r *relay) shutdown() {
	r.cancel()
	r.ln.Close()
	if r.gate != nil {
		r.gate.Close()
	}
	r.mu.Lock()
	r.closing = true
	for _, l := range r.locals {
		l.c.Close()
	}
	for c := range r.pending {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// accept accepts connections into the gate until the relay stops. A
// connection is a stranger's until its hello shows the token: the gate
// bounds them (in all, and per host on a TLS listener for other hosts when
// perHost), hello bounds each in size and time, and their refusals are
// counted.
func (r *relay) accept(perHost bool) {
	r.gate = extern.NewGate(extern.MaxUnauthenticated, extern.MaxUnauthenticatedPerHost, extern.MaxWaiting, 2*extern.HelloTimeout, r.startHello,
		func(c net.Conn, err error) { r.strangers.Add(r.cfg.Log, "relay", c.RemoteAddr(), err) })
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := r.ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) || r.ctx.Err() != nil {
					return
				}
				r.cfg.Log.Warn("relay: accepting a connection", "err", err)
				select {
				case <-r.ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			r.gate.Add(c, perHost)
		}
	}()
}

// startHello reads a connection's hello in a goroutine of its own, for the
// gate: an authenticated connection goes to joined, a refusal to
// refusals; release frees the gate's slot.
func (r *relay) startHello(c net.Conn, release func()) {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		c.Close()
		release()
		return
	}
	r.pending[c] = true
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		l, err := hello(c, r.cfg.Token)
		r.mu.Lock()
		delete(r.pending, c)
		r.mu.Unlock()
		if err != nil {
			var s *extern.Stranger
			if !errors.As(err, &s) || s.Tells() {
				writeFrame(c, &extern.Frame{Type: extern.TypeError, Reason: err.Error()})
			}
			if s != nil {
				r.strangers.Add(r.cfg.Log, "relay", c.RemoteAddr(), err)
			}
			c.Close()
			release() // after the answer: the gate bounds these goroutines too
			select {
			case r.refusals <- err:
			default:
			}
			return
		}
		release()
		select {
		case r.joined <- l:
		case <-r.ctx.Done():
			c.Close()
		}
	}()
}

// awaitLocals takes authenticated local agents until every vehicle has
// one, refusing those that claim a vehicle not served here or already
// connected; it fails after ConnectTimeout, naming the missing nodes.
func (r *relay) awaitLocals() error {
	deadline := time.NewTimer(r.cfg.ConnectTimeout)
	defer deadline.Stop()
	lastRefusal := ""
	for len(r.owner) < len(r.want) {
		select {
		case l := <-r.joined:
			if bad := r.claim(l); bad != nil {
				writeFrame(l.c, &extern.Frame{Type: extern.TypeError, Reason: bad.Error()})
				l.c.Close()
				lastRefusal = bad.Error()
				r.cfg.Log.Warn("relay: agent refused", "from", l.c.RemoteAddr().String(), "err", bad)
				continue
			}
			for _, v := range l.vehicles {
				r.owner[v] = l
			}
			r.cfg.Log.Info("relay: agent connected", "agent", l.name, "nodes", FormatList(l.vehicles), "connected", len(r.owner), "of", len(r.want))
			r.mu.Lock()
			r.locals = append(r.locals, l)
			r.mu.Unlock()
		case err := <-r.refusals:
			lastRefusal = err.Error()
			if _, ok := err.(*extern.Stranger); !ok { // strangers are logged as counted
				r.cfg.Log.Warn("relay: agent refused", "err", err)
			}
		case <-deadline.C:
			var missing []int
			for _, v := range r.cfg.Vehicles {
				if r.owner[v] == nil {
					missing = append(missing, v)
				}
			}
			msg := fmt.Sprintf("relay: nodes %s did not connect within %v", FormatList(missing), r.cfg.ConnectTimeout)
			if lastRefusal != "" {
				msg += "; the last connection refused: " + lastRefusal
			}
			err := errors.New(msg)
			failLocals(r.locals, err)
			return err
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
	return nil
}

// claim returns why l may not step its vehicles (the last such vehicle),
// or nil.
func (r *relay) claim(l *local) error {
	var bad error
	for _, v := range l.vehicles {
		switch {
		case !r.want[v]:
			bad = fmt.Errorf("node %d is not served by this relay (--vehicles %s)", v, FormatList(r.cfg.Vehicles))
		case r.owner[v] != nil:
			bad = fmt.Errorf("node %d is already connected (%s)", v, r.owner[v].name)
		}
	}
	return bad
}

// refuseLate refuses late or extra connections from now on.
func (r *relay) refuseLate() {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			select {
			case l := <-r.joined:
				writeFrame(l.c, &extern.Frame{Type: extern.TypeError, Reason: fmt.Sprintf("every node of this relay (%s) is already connected", FormatList(r.cfg.Vehicles))})
				l.c.Close()
			case <-r.ctx.Done():
				return
			}
		}
	}()
}

// joinUpstream joins the run upstream for every local agent (one hello
// with all their vehicles, asking for batches) and passes the welcome on
// to each of them. Once it returns nil, r.up is open.
func (r *relay) joinUpstream() error {
	cfg := r.cfg
	up, err := extern.Dial(cfg.Upstream, cfg.Fingerprint, cfg.ConnectTimeout)
	if err != nil {
		err = fmt.Errorf("relay: upstream %s: %w", cfg.Upstream, err)
		failLocals(r.locals, err)
		return err
	}
	ids := slices.Clone(cfg.Vehicles)
	sort.Ints(ids)
	name := cfg.Name
	if name == "" {
		name = "relay"
	}
	if len(name) > 64 {
		name = name[:64]
	}
	fail := func(err error) error {
		up.Close()
		failLocals(r.locals, err)
		return err
	}
	if err := writeFrame(up, &extern.Frame{Type: extern.TypeHello, Version: extern.Version, Token: cfg.Token, Vehicles: ids, Name: name, Batch: true}); err != nil {
		return fail(fmt.Errorf("relay: upstream %s: sending the hello: %w", cfg.Upstream, err))
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
		return fail(fmt.Errorf("relay: upstream %s: %w", cfg.Upstream, err))
	}
	up.SetReadDeadline(time.Time{})
	for _, l := range r.locals {
		lw := *w
		lw.Vehicles = l.vehicles
		if err := writeFrame(l.c, &lw); err != nil {
			return fail(fmt.Errorf("relay: %s: sending the welcome: %w", l.describe(), err))
		}
	}
	r.up, r.ur, r.ubuf = up, ur, ubuf
	cfg.Log.Info("relay joined the run", "upstream", cfg.Upstream, "agents", len(r.locals), "vehicles", len(ids))
	return nil
}

// startReaders starts one goroutine per connection (upstream and each
// local one) that sends its frames, and then its end, to events.
func (r *relay) startReaders() {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			f, err := extern.ReadFrame(r.ur, &r.ubuf)
			select {
			case r.events <- event{f: f, err: err}:
			case <-r.ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for _, l := range r.locals {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			rd := bufio.NewReaderSize(l.c, 64<<10)
			var buf []byte
			for {
				f, err := extern.ReadFrame(rd, &buf)
				select {
				case r.events <- event{from: l, f: f, err: err}:
				case <-r.ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// loop relays frames until the run ends upstream (nil) or fails.
func (r *relay) loop() error {
	r.roundTimer = time.NewTimer(time.Hour)
	r.roundTimer.Stop()
	defer r.roundTimer.Stop()
	for {
		select {
		case ev := <-r.events:
			if ev.from == nil {
				if done, err := r.fromUpstream(ev); done || err != nil {
					return err
				}
			} else if err := r.fromLocal(ev); err != nil {
				return err
			}
		case <-r.roundTimer.C:
			if err := r.roundTimedOut(); err != nil {
				return err
			}
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
}

// answer counts a frame for the batch going upstream: node v's step ends
// with its done or error frame.
func (r *relay) answer(v int, f *extern.Frame) error {
	r.st.Up++
	if err := r.upBat.Add(f); err != nil {
		return err
	}
	if f.Type == extern.TypeDone || f.Type == extern.TypeError {
		delete(r.outstanding, v)
	}
	return nil
}

// flushUp sends the round's answers upstream in one batch once no node
// owes its step.
func (r *relay) flushUp() error {
	if len(r.outstanding) > 0 || !r.upBat.Pending() {
		return nil
	}
	r.st.Rounds++
	r.roundTimer.Stop()
	r.up.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.up.Write(r.upBat.Take()); err != nil {
		return fmt.Errorf("relay: upstream %s: %w", r.cfg.Upstream, err)
	}
	return nil
}

// roundTimedOut fails the agents that did not answer within StepTimeout;
// the others' answers go upstream.
func (r *relay) roundTimedOut() error {
	hung := map[*local]bool{}
	for v := range r.outstanding {
		hung[r.owner[v]] = true
	}
	for _, l := range r.locals {
		if hung[l] {
			if err := r.kill(l, fmt.Errorf("no END-TICK within %v of wall-clock time (hung?)", r.cfg.StepTimeout)); err != nil {
				return err
			}
		}
	}
	return r.flushUp()
}

// fromUpstream handles a frame (or the end) of the upstream connection:
// the run's end (done), an error, or a batch of ticks to fan out.
func (r *relay) fromUpstream(ev event) (done bool, err error) {
	cfg := r.cfg
	if ev.err != nil {
		err := fmt.Errorf("relay: upstream %s: %w", cfg.Upstream, ev.err)
		if errors.Is(ev.err, io.EOF) {
			err = fmt.Errorf("relay: upstream %s closed the connection without ending the run", cfg.Upstream)
		}
		failLocals(r.locals, err)
		return false, err
	}
	switch ev.f.Type {
	case extern.TypeEnd, extern.TypeError:
		for _, l := range r.locals {
			writeFrame(l.c, ev.f)
		}
		if ev.f.Type == extern.TypeError {
			return true, fmt.Errorf("relay: upstream %s: %s", cfg.Upstream, ev.f.Reason)
		}
		if ev.f.Failed {
			return true, fmt.Errorf("relay: the run failed (upstream %s): %s", cfg.Upstream, ev.f.Reason)
		}
		return true, nil
	case extern.TypeBatch:
	default:
		err := fmt.Errorf("relay: upstream %s: protocol error: a %s frame (want batch, end or error)", cfg.Upstream, ev.f.Type)
		failLocals(r.locals, err)
		return false, err
	}
	if err := r.fanOut(ev.f.Frames); err != nil {
		return false, err
	}
	if len(r.outstanding) > 0 {
		r.roundTimer.Reset(cfg.StepTimeout)
	}
	return false, r.flushUp()
}

// fanOut sends a batch's ticks to the local connections, one write per
// connection; a dead node's tick is answered with its error at once.
func (r *relay) fanOut(ticks []extern.Frame) error {
	cfg := r.cfg
	var touched []*local
	for i := range ticks {
		f := &ticks[i]
		l := r.owner[f.Vehicle]
		if f.Type != extern.TypeTick || l == nil {
			err := fmt.Errorf("relay: upstream %s: protocol error: a %s frame for node %d in a batch (want ticks for nodes %s)",
				cfg.Upstream, f.Type, f.Vehicle, FormatList(cfg.Vehicles))
			failLocals(r.locals, err)
			return err
		}
		if why, ok := r.dead[f.Vehicle]; ok {
			if err := r.answer(f.Vehicle, &extern.Frame{Type: extern.TypeError, Vehicle: f.Vehicle, Reason: why}); err != nil {
				return err
			}
			continue
		}
		if r.outstanding[f.Vehicle] {
			err := fmt.Errorf("relay: upstream %s: protocol error: a tick for node %d before its last step ended", cfg.Upstream, f.Vehicle)
			failLocals(r.locals, err)
			return err
		}
		r.outstanding[f.Vehicle] = true
		r.sent[f.Vehicle] = stepCount{}
		r.st.Down++
		var err error
		if l.batch {
			err = l.bat.Add(f)
		} else {
			l.wbuf, err = extern.AppendFrame(l.wbuf, f)
		}
		if err != nil {
			return fmt.Errorf("relay: %w", err)
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
			if err := r.kill(l, fmt.Errorf("sending ticks: %w", err)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fromLocal handles a frame (or the end) of a local connection: its
// answers go into the round's batch; a connection that fails or breaks
// the protocol is killed.
func (r *relay) fromLocal(ev event) error {
	l := ev.from
	if _, gone := r.dead[l.vehicles[0]]; gone {
		return nil
	}
	if ev.err != nil {
		why := fmt.Errorf("protocol error: %w", ev.err)
		if errors.Is(ev.err, io.EOF) || errors.Is(ev.err, syscall.ECONNRESET) {
			why = errors.New("connection closed by the agent")
		}
		if err := r.kill(l, why); err != nil {
			return err
		}
		return r.flushUp()
	}
	frames := []*extern.Frame{ev.f}
	if ev.f.Type == extern.TypeBatch {
		if !l.batch {
			frames = nil
			if err := r.kill(l, errors.New("protocol error: a batch frame from an agent whose hello did not ask for batches")); err != nil {
				return err
			}
		} else {
			frames = frames[:0]
			for i := range ev.f.Frames {
				frames = append(frames, &ev.f.Frames[i])
			}
		}
	}
	for _, f := range frames {
		if bad := r.check(l, f); bad != nil {
			if err := r.kill(l, bad); err != nil {
				return err
			}
			break
		}
		if err := r.answer(f.Vehicle, f); err != nil {
			return fmt.Errorf("relay: %s: %w", l.describe(), err)
		}
	}
	return r.flushUp()
}

// check returns the protocol error of frame f from l, or nil; it counts
// f against the server's bounds of one step (extern.MaxStepFrames,
// MaxStepBytes), checked here, where the agent is known.
func (r *relay) check(l *local, f *extern.Frame) error {
	switch {
	case !slices.Contains(l.vehicles, f.Vehicle):
		return fmt.Errorf("protocol error: a %s frame for node %d, which this connection does not step", f.Type, f.Vehicle)
	case f.Type == extern.TypeTick || f.Type == extern.TypeHello || f.Type == extern.TypeBatch:
		return fmt.Errorf("protocol error: a %s frame from an agent", f.Type)
	case !r.outstanding[f.Vehicle]:
		return fmt.Errorf("protocol error: a %s frame for node %d outside its step", f.Type, f.Vehicle)
	}
	c := r.sent[f.Vehicle]
	c.frames++
	c.bytes += f.Footprint()
	r.sent[f.Vehicle] = c
	if c.frames > extern.MaxStepFrames {
		return fmt.Errorf("protocol error: node %d sent more than %d frames in one step (at most %d per step)", f.Vehicle, extern.MaxStepFrames, extern.MaxStepFrames)
	} else if c.bytes > extern.MaxStepBytes {
		return fmt.Errorf("protocol error: node %d sent more than %d MiB in one step (at most %d MiB per step)", f.Vehicle, extern.MaxStepBytes>>20, extern.MaxStepBytes>>20)
	}
	return nil
}

// stepCount is what a node sent in its step.
type stepCount struct{ frames, bytes int }

// kill marks a local connection's vehicles dead: the steps they owe are
// answered with an error frame that fails just those agents upstream (as
// if they had failed on a direct connection), and so are their later
// ticks.
func (r *relay) kill(l *local, why error) error {
	reason := "via relay: " + why.Error()
	l.c.Close()
	for _, v := range l.vehicles {
		r.dead[v] = reason
		if r.outstanding[v] {
			if err := r.answer(v, &extern.Frame{Type: extern.TypeError, Vehicle: v, Reason: reason}); err != nil {
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
