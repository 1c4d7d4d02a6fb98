package extern

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"skyloop/agent"
	"skyloop/edge"
	"skyloop/geom"
	"skyloop/record"
)

// Config is what a server needs from the run.
type Config struct {
	Tick   int64 // kernel tick, ns
	Nodes  []agent.NodeRef
	Origin geom.Geodetic
	// Vehicle reports whether node id is a vehicle.
	Vehicle func(id int) bool
	// Dir is the working directory of launched commands (the scenario
	// file's directory).
	Dir string
	// Output, when set, opens the files a launched process writes its
	// standard output and error to (in the run directory).
	Output func(name string) (io.Writer, error)
	Log    *slog.Logger
	// Ready, when set, is told where to connect and with which token once
	// the server listens (before it waits for the agents); by default the
	// server prints it when some agent has no command.
	Ready func(socket, addr, token string)
	// Listen, when set, is a TCP address (host:port) where agents and
	// relays on other hosts connect over TLS, with a certificate made for
	// the run (Fingerprint) and the run's token.
	Listen string
	// Remote, when set, is told the remote address and the certificate's
	// fingerprint once the server listens there; by default the server
	// prints them with the token.
	Remote func(addr, fingerprint, token string)
	// HelloTimeout, MaxUnauthenticated, MaxUnauthenticatedPerHost and
	// MaxWaiting bound the connections that have not authenticated yet
	// (0: the package's constants of those names; tests shorten them).
	HelloTimeout              time.Duration
	MaxUnauthenticated        int
	MaxUnauthenticatedPerHost int
	MaxWaiting                int
}

// Server accepts external agents on a Unix socket and on TCP loopback,
// launches the processes the scenario asks for, and carries the tick
// protocol between the run and them.
type Server struct {
	cfg      Config
	token    string
	tmp      string
	owner    *record.Lock
	unixLn   net.Listener
	tcpLn    net.Listener
	tlsLn    net.Listener
	finger   string
	agents   map[int]*Agent
	netAgent *Agent
	order    []*Agent
	procs    []*proc

	mu      sync.Mutex
	conns   []*conn        // connections that joined
	pending map[*conn]bool // connections before their hello
	fatal   error
	closed  bool
	done    chan struct{} // closed by Stop
	refusal string        // the last refused hello that failed no agent
	batched []*conn       // connections in batch mode (relays)
	queued  atomic.Bool   // some batch connection has ticks to send
	wg      sync.WaitGroup

	// gate bounds the connections before their hello; strangers counts
	// those refused before authentication.
	gate      *Gate
	strangers Refusals

	// wake is poked when an agent joins or fails, so that Start sees it
	// at once.
	wake chan struct{}
}

// Agent is the server side of one external participant: a node stepped by
// an external process (type 0), or the external network simulator (type 1).
type Agent struct {
	srv     *Server
	node    agent.NodeRef
	b       *Behavior   // type 0
	net     *NetBackend // type 1
	role    int
	command string
	connTO  time.Duration
	in      inbox
	failed  chan struct{}
	// ticks counts the ticks handed to the connection (the run's
	// goroutine); the connection's reader counts in step what the agent
	// sent since its last done, and dones its done frames.
	ticks   atomic.Int64
	step    stepCount
	dones   int64
	errOnce sync.Once
	err     error
	conn    *conn
	proc    *proc
	joined  chan struct{}
}

// fail records why the agent stopped; the first reason wins.
func (a *Agent) fail(err error) {
	a.errOnce.Do(func() {
		a.err = err
		close(a.failed)
		a.srv.poke()
	})
}

// poke wakes Start if it waits.
func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (a *Agent) describe() string {
	s := "external agent " + a.node.Name
	if a.role == 1 {
		s = "external network simulator"
	}
	if a.proc != nil {
		s += fmt.Sprintf(" (command %q", a.proc.command)
		if a.proc.pid > 0 {
			s += fmt.Sprintf(", pid %d", a.proc.pid)
		}
		s += ")"
	} else if a.conn != nil && a.conn.batch {
		s += " via relay " + a.conn.describe()
	} else if a.conn != nil && a.conn.pid > 0 {
		s += fmt.Sprintf(" (connected on its own, pid %d)", a.conn.pid)
	}
	return s
}

// RelayFault is an agent's failure that is its relay's: the relay's
// connection closed or broke the protocol, or the relay did not answer a
// round. The run reports it by the relay's name, address and nodes.
type RelayFault struct {
	// Relay names the relay: its name, address and nodes.
	Relay string
	Err   error
}

func (e *RelayFault) Error() string { return "relay " + e.Relay + ": " + e.Err.Error() }

func (e *RelayFault) Unwrap() error { return e.Err }

// conn is one client connection.
type conn struct {
	c      net.Conn
	name   string // the hello's name, or the peer's address
	addr   string // the peer's address
	pid    int    // the peer's process, when the kernel tells (Unix socket)
	agents []*Agent
	wmu    sync.Mutex
	wbuf   []byte
	// batch: the ticks of a round go out in one batch frame (a relay);
	// bat gathers them until the round's first step flushes it.
	batch bool
	bat   Batcher
	// byID finds the agent of a frame on a connection with many.
	byID map[int]*Agent
}

// describe names a relay's connection: "relay@hostB" at 10.0.0.2:41234
// (nodes 0-49).
func (c *conn) describe() string {
	ids := make([]int, len(c.agents))
	for i, a := range c.agents {
		ids[i] = int(a.node.ID)
	}
	return fmt.Sprintf("%q at %s (nodes %s)", c.name, c.addr, FormatNodes(ids))
}

// queue adds a tick to the connection's batch.
func (c *conn) queue(f *Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.bat.Add(f)
}

// flush sends the batch gathered so far.
func (c *conn) flush(timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.bat.Pending() {
		return nil
	}
	if timeout > 0 {
		c.c.SetWriteDeadline(time.Now().Add(timeout))
	}
	_, err := c.c.Write(c.bat.Take())
	return err
}

func (c *conn) write(f *Frame, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var err error
	if c.wbuf, err = AppendFrame(c.wbuf[:0], f); err != nil {
		return err
	}
	if timeout > 0 {
		c.c.SetWriteDeadline(time.Now().Add(timeout))
	}
	_, err = c.c.Write(c.wbuf)
	return err
}

// proc is a launched process.
type proc struct {
	command string
	cmd     *exec.Cmd
	pid     int
	agents  []*Agent
	tail    *tailBuffer
	done    chan struct{}
	waitErr error
}

// NewServer returns a server for a run; agents are added with Add before
// Start.
func NewServer(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.HelloTimeout <= 0 {
		cfg.HelloTimeout = HelloTimeout
	}
	if cfg.MaxUnauthenticated <= 0 {
		cfg.MaxUnauthenticated = MaxUnauthenticated
	}
	if cfg.MaxUnauthenticatedPerHost <= 0 {
		cfg.MaxUnauthenticatedPerHost = MaxUnauthenticatedPerHost
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = MaxWaiting
	}
	s := &Server{cfg: cfg, agents: map[int]*Agent{}, wake: make(chan struct{}, 1), pending: map[*conn]bool{},
		done: make(chan struct{})}
	s.gate = NewGate(cfg.MaxUnauthenticated, cfg.MaxUnauthenticatedPerHost, cfg.MaxWaiting, 2*cfg.HelloTimeout, s.startConn,
		func(c net.Conn, err error) { s.strangers.Add(s.cfg.Log, "extern", c.RemoteAddr(), err) })
	return s
}

// Refused returns the count of connections refused before authentication
// so far.
func (s *Server) Refused() RefusalReport { return s.strangers.Report() }

// Report is the server's part of summary.json: the connections it refused
// before authentication ("extern": {"refused": ...}), or nil when there
// were none.
func (s *Server) Report() (key string, v any) {
	r := s.strangers.Report()
	if r.Total == 0 {
		return serviceKey, nil
	}
	return serviceKey, map[string]any{"refused": r}
}

// Add registers the external agent of node ref, served by behaviour b.
func (s *Server) Add(ref agent.NodeRef, b *Behavior) {
	a := &Agent{srv: s, node: ref, b: b, command: b.p.Command, connTO: time.Duration(b.p.ConnectTimeout),
		in: newInbox(), failed: make(chan struct{}), joined: make(chan struct{})}
	s.agents[int(ref.ID)] = a
	s.order = append(s.order, a)
	b.bind(a)
}

// AddNetwork registers the external network simulator that backend nb
// talks to (a type 1 subscriber).
func (s *Server) AddNetwork(nb *NetBackend) {
	a := &Agent{srv: s, net: nb, role: 1, command: nb.p.Command, connTO: time.Duration(nb.p.ConnectTimeout),
		node: agent.NodeRef{ID: -1, Name: "network"},
		in:   newInbox(), failed: make(chan struct{}), joined: make(chan struct{})}
	s.netAgent = a
	s.order = append(s.order, a)
	nb.ag = a
}

// Token returns the secret a client must present in its hello.
func (s *Server) Token() string { return s.token }

// SocketPath returns the Unix socket's path (after Start).
func (s *Server) SocketPath() string { return filepath.Join(s.tmp, "extern.sock") }

// TCPAddr returns the TCP address (after Start).
func (s *Server) TCPAddr() string { return s.tcpLn.Addr().String() }

// RemoteAddr returns the address of the TLS listener for other hosts, or
// "" (after Start).
func (s *Server) RemoteAddr() string {
	if s.tlsLn == nil {
		return ""
	}
	return s.tlsLn.Addr().String()
}

// Fingerprint returns the TLS certificate's fingerprint, or "" without a
// remote listener (after Start).
func (s *Server) Fingerprint() string { return s.finger }

// sendTick hands a tick to a's connection: at once, or into the batch of
// a relay's connection.
func (s *Server) sendTick(a *Agent, f *Frame, timeout time.Duration) error {
	a.ticks.Add(1) // before the agent can answer it
	if !a.conn.batch {
		return a.conn.write(f, timeout)
	}
	if err := a.conn.queue(f); err != nil {
		return err
	}
	s.queued.Store(true)
	return nil
}

// flushBatches sends the relays the ticks gathered in this round's
// prepare phase; the round's first step calls it, so every relay gets
// its batch before the server waits for any answer.
func (s *Server) flushBatches(timeout time.Duration) {
	if !s.queued.Swap(false) {
		return // no relay has ticks: the common case costs one atomic load
	}
	s.mu.Lock()
	conns := append([]*conn(nil), s.batched...)
	s.mu.Unlock()
	for _, c := range conns {
		if err := c.flush(timeout); err != nil {
			for _, a := range c.agents {
				a.fail(&RelayFault{Relay: c.describe(), Err: fmt.Errorf("sending the round's ticks: %w", err)})
			}
		}
	}
}

// Err returns the error that must end the run, if any.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

func (s *Server) setFatal(err error) {
	s.mu.Lock()
	if s.fatal == nil {
		s.fatal = err
	}
	s.mu.Unlock()
}

// Start listens, launches the scenario's commands and waits until every
// agent has connected (each agent's connect timeout bounds the wait). An
// agent whose process exits, or whose hello is refused, fails at once.
func (s *Server) Start() error {
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return fmt.Errorf("extern: making a token: %w", err)
	}
	s.token = hex.EncodeToString(tok[:])
	var err error
	removeStaleDirs(os.TempDir())
	// The directory is made under another name and renamed once its
	// owner lock is held: another server cleaning up must never see it
	// between the lock file's creation and its flock (it would take the
	// lock for a dead server's and remove the directory).
	starting, err := os.MkdirTemp("", startPrefix)
	if err != nil {
		return fmt.Errorf("extern: %w", err)
	}
	// Held while the server runs: a directory whose owner lock is free
	// was left by a skyloop that died, and the next server removes it.
	if s.owner, err = record.TryLock(filepath.Join(starting, "owner")); err != nil {
		os.RemoveAll(starting)
		return fmt.Errorf("extern: %w", err)
	}
	s.tmp = filepath.Join(filepath.Dir(starting), tmpPrefix+strings.TrimPrefix(filepath.Base(starting), startPrefix))
	if err := os.Rename(starting, s.tmp); err != nil {
		s.owner.Unlock()
		os.RemoveAll(starting)
		return fmt.Errorf("extern: %w", err)
	}
	s.owner.Moved(filepath.Join(s.tmp, "owner"))
	if s.unixLn, err = net.Listen("unix", s.SocketPath()); err != nil {
		return fmt.Errorf("extern: listening on %s: %w", s.SocketPath(), err)
	}
	if s.tcpLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return fmt.Errorf("extern: listening on TCP loopback: %w", err)
	}
	type listener struct {
		ln      net.Listener
		gated   bool // bounded before the hello (not the private Unix socket)
		perHost bool // and per remote host (other hosts)
	}
	lns := []listener{{s.unixLn, false, false}, {s.tcpLn, true, false}}
	if s.cfg.Listen != "" {
		cert, finger, err := NewCertificate()
		if err != nil {
			return fmt.Errorf("extern: %w", err)
		}
		ln, err := net.Listen("tcp", s.cfg.Listen)
		if err != nil {
			return fmt.Errorf("extern: listening for remote agents on %s (--listen): %w", s.cfg.Listen, err)
		}
		s.tlsLn, s.finger = tls.NewListener(ln, ServerTLS(cert)), finger
		lns = append(lns, listener{s.tlsLn, true, true})
	}
	for _, l := range lns {
		s.wg.Add(1)
		go s.accept(l.ln, l.gated, l.perHost)
	}
	if err := s.launch(); err != nil {
		return err
	}
	var waiting []string
	for _, a := range s.order {
		if a.command == "" {
			if a.role == 1 {
				waiting = append(waiting, "the network simulator (role 1)")
			} else {
				waiting = append(waiting, fmt.Sprintf("%s (node %d)", a.node.Name, a.node.ID))
			}
		}
	}
	if s.tlsLn != nil {
		if s.cfg.Remote != nil {
			s.cfg.Remote(s.RemoteAddr(), s.finger, s.token)
		} else {
			msg := fmt.Sprintf("extern: agents and relays on other hosts connect to %s (TLS) with --fingerprint %s --token %s",
				s.RemoteAddr(), s.finger, s.token)
			s.cfg.Log.Info(msg)
			fmt.Fprintln(os.Stderr, msg)
		}
	}
	if s.cfg.Ready != nil {
		s.cfg.Ready(s.SocketPath(), s.TCPAddr(), s.token)
	} else if len(waiting) > 0 {
		msg := fmt.Sprintf("extern: waiting for agents %s: connect to unix:%s or tcp:%s with token %s",
			strings.Join(waiting, ", "), s.SocketPath(), s.TCPAddr(), s.token)
		s.cfg.Log.Info(msg) // printed just below; the log keeps it for --verbose and files
		fmt.Fprintln(os.Stderr, msg)
	}
	begin := time.Now()
	pending := append([]*Agent(nil), s.order...)
	for {
		// In node order: joined agents leave the list, failed ones are
		// handled (the first under on_failure: abort ends the wait), the
		// others set the next deadline.
		var next time.Time
		kept := pending[:0]
		for _, a := range pending {
			select {
			case <-a.joined:
				continue
			case <-a.failed:
			default:
				if deadline := begin.Add(a.connTO); time.Now().Before(deadline) {
					kept = append(kept, a)
					if next.IsZero() || deadline.Before(next) {
						next = deadline
					}
					continue
				}
				a.fail(s.connectTimeoutError(a))
			}
			if a.role == 1 {
				return errors.New(a.describe() + ": " + a.err.Error())
			}
			if err := a.b.failure(a.err); err != nil {
				return err
			}
		}
		pending = kept
		if len(pending) == 0 {
			return nil
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// connectTimeoutError says that agent a did not connect in time: what the
// wait was for, what its process was doing, and the setting that gives it
// longer (connect_timeout, and where it goes in the scenario).
func (s *Server) connectTimeoutError(a *Agent) error {
	waited := fmt.Sprintf("its hello on unix:%s or tcp:%s", s.SocketPath(), s.TCPAddr())
	if ra := s.RemoteAddr(); ra != "" {
		waited += " or tls:" + ra
	}
	var doing, tail string
	switch {
	case a.proc == nil:
		doing = "; skyloop starts no process for it (no command): start it and have it connect with the run's token"
	case a.proc.pid > 0:
		select {
		case <-a.proc.done:
			doing = fmt.Sprintf("; its process (pid %d) exited (%s) without connecting", a.proc.pid, exitText(a.proc.waitErr))
		default:
			doing = fmt.Sprintf("; its process (pid %d) was still running without having connected: still starting (a slow interpreter, imports, a busy machine) or connecting elsewhere", a.proc.pid)
		}
		if tail = a.proc.tail.lastLines(); tail == "" {
			doing += "; it wrote nothing to stderr"
		}
	}
	where := fmt.Sprintf("the extern behaviour's params, e.g. {type: extern, connect_timeout: %v}", raised(a.connTO))
	if a.node.Group != "" {
		where = fmt.Sprintf("the extern behaviour of group %q, e.g. {type: extern, connect_timeout: %v}", a.node.Group, raised(a.connTO))
	}
	if a.role == 1 {
		where = fmt.Sprintf("network: {backend: extern, connect_timeout: %v}", raised(a.connTO))
	}
	return fmt.Errorf("did not connect within %v (connect_timeout) while the run waited for %s%s%s; to wait longer, raise connect_timeout in %s%s",
		a.connTO, waited, doing, s.refusalNote(), where, tail)
}

// raised suggests a longer wait than d: four times it, in whole seconds,
// at least a minute.
func raised(d time.Duration) time.Duration {
	return max(time.Minute, (4 * d).Round(time.Second))
}

// refusalNote returns the last refused hello that named no waiting agent,
// for the message of an agent that never connected.
func (s *Server) refusalNote() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refusal == "" {
		return ""
	}
	return "; the last connection refused: " + s.refusal
}

// render fills a command template for one agent.
func render(tmpl string, a *Agent) string {
	r := strings.NewReplacer("{id}", strconv.Itoa(int(a.node.ID)), "{name}", a.node.Name, "{group}", a.node.Group,
		"{index}", strconv.Itoa(a.node.Index))
	return r.Replace(tmpl)
}

// launch starts one process per distinct rendered command: a template
// without per-vehicle fields starts one process for all its agents.
func (s *Server) launch() error {
	byCmd := map[string]*proc{}
	var order []string
	for _, a := range s.order {
		if a.command == "" {
			continue
		}
		c := render(a.command, a)
		p := byCmd[c]
		if p == nil {
			p = &proc{command: c, tail: &tailBuffer{max: 4096}, done: make(chan struct{})}
			byCmd[c] = p
			order = append(order, c)
		}
		p.agents = append(p.agents, a)
		a.proc = p
	}
	for _, c := range order {
		p := byCmd[c]
		ids := make([]string, len(p.agents))
		for i, a := range p.agents {
			ids[i] = strconv.Itoa(int(a.node.ID))
		}
		cmd := exec.Command("/bin/sh", "-c", c)
		cmd.Dir = s.cfg.Dir
		cmd.Env = append(os.Environ(), "SKYLOOP_SOCKET="+s.SocketPath(), "SKYLOOP_ADDR="+s.TCPAddr(), "SKYLOOP_TOKEN="+s.token,
			"SKYLOOP_VEHICLE="+ids[0], "SKYLOOP_VEHICLES="+strings.Join(ids, ","), "SKYLOOP_NAME="+p.agents[0].node.Name)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out, errw io.Writer = io.Discard, io.Discard
		if s.cfg.Output != nil {
			base := "procs/" + p.agents[0].node.Name
			if p.agents[0].role == 1 {
				base = "procs/network"
			} else if len(p.agents) > 1 {
				base = "procs/" + p.agents[0].node.Group
			}
			var err error
			if out, err = s.cfg.Output(base + ".out"); err != nil || out == nil {
				out = io.Discard
			}
			if errw, err = s.cfg.Output(base + ".err"); err != nil || errw == nil {
				errw = io.Discard
			}
		}
		cmd.Stdout = out
		cmd.Stderr = io.MultiWriter(errw, p.tail)
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("extern: starting %q for %s: %w", c, p.agents[0].node.Name, err)
		}
		p.cmd, p.pid = cmd, cmd.Process.Pid
		s.procs = append(s.procs, p)
		go func() {
			p.waitErr = cmd.Wait()
			close(p.done)
			// A process that ends while the run needs it fails its agents
			// (after a moment, so that a connection's own error, usually
			// more telling, is seen first).
			time.Sleep(50 * time.Millisecond)
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if !closed {
				for _, a := range p.agents {
					a.fail(fmt.Errorf("process exited (%s)%s", exitText(p.waitErr), p.tail.lastLines()))
				}
			}
		}()
	}
	return nil
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + ws.Signal().String()
		}
		return fmt.Sprintf("status %d", ee.ExitCode())
	}
	return err.Error()
}

// peerPID returns the process id of the other end of a Unix socket
// connection (SO_PEERCRED), or 0.
func peerPID(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	rc.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// accept serves a listener. A gated one's connections go through the
// gate (bounded before their hello; perHost: per remote host too); the
// private Unix socket's are read at once.
func (s *Server) accept(ln net.Listener, gated, perHost bool) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.isClosed() {
				return
			}
			// Out of file descriptors, say: the listener is not dead;
			// wait a moment rather than spin.
			s.cfg.Log.Warn("extern: accepting a connection", "err", err)
			select {
			case <-s.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if gated {
			s.gate.Add(c, perHost)
		} else {
			s.startConn(c, func() {})
		}
	}
}

// startConn begins serving an accepted connection: release is called once
// its hello is read or refused.
func (s *Server) startConn(c net.Conn, release func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		release()
		return
	}
	addr := c.RemoteAddr().String()
	pid := peerPID(c)
	if _, unix := c.(*net.UnixConn); unix {
		addr = "the Unix socket"
		if pid > 0 {
			addr += fmt.Sprintf(" (pid %d)", pid)
		}
	}
	cn := &conn{c: c, name: addr, addr: addr, pid: pid}
	s.pending[cn] = true
	s.wg.Add(1)
	s.mu.Unlock()
	go s.serve(cn, release)
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// serve reads one connection: a hello, then frames for its agents. Until
// the hello's token is checked the connection is a stranger's, bounded by
// the gate, HelloTimeout and MaxHello; refusing it changes nothing in the
// run. An authenticated hello refused for other reasons fails the waiting
// agents it names (refused).
func (s *Server) serve(cn *conn, release func()) {
	defer s.wg.Done()
	cn.c.SetDeadline(time.Now().Add(s.cfg.HelloTimeout))
	hello, err := ReadHello(cn.c, s.token)
	var st *Stranger
	if errors.As(err, &st) {
		s.forget(cn)
		s.strangers.Add(s.cfg.Log, "extern", cn.c.RemoteAddr(), err)
		s.noteRefusal(fmt.Errorf("%s: %w (no token: it could be anyone's)", cn.addr, err))
		if st.Tells() {
			cn.write(&Frame{Type: TypeError, Reason: err.Error()}, time.Second)
		}
		cn.c.Close()
		release() // after the answer: the gate bounds these goroutines too
		return
	}
	release()
	if err == nil {
		err = s.join(cn, hello)
	}
	if err != nil {
		s.forget(cn)
		s.refused(cn, hello, err)
		cn.write(&Frame{Type: TypeError, Reason: err.Error()}, time.Second)
		cn.c.Close()
		return
	}
	cn.c.SetDeadline(time.Time{})
	r := bufio.NewReaderSize(cn.c, 64<<10)
	var buf []byte
	for {
		f, err := ReadFrame(r, &buf)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("connection closed by the agent")
				if cn.batch {
					err = &RelayFault{Relay: cn.describe(), Err: errors.New("the connection closed (relay killed or crashed?)")}
				} else if p := cn.agents[0].proc; p != nil {
					// The process is probably exiting: its status says more.
					select {
					case <-p.done:
						err = fmt.Errorf("process exited (%s)%s", exitText(p.waitErr), p.tail.lastLines())
					case <-time.After(500 * time.Millisecond):
					}
				}
			} else if cn.batch {
				err = &RelayFault{Relay: cn.describe(), Err: fmt.Errorf("protocol error: %w", err)}
			} else {
				err = fmt.Errorf("protocol error: %w", err)
			}
			for _, a := range cn.agents {
				a.fail(err)
			}
			return
		}
		frames := []*Frame{f}
		if f.Type == TypeBatch {
			if !cn.batch {
				err := errors.New("protocol error: a batch frame on a connection whose hello did not ask for batches")
				for _, a := range cn.agents {
					a.fail(err)
				}
				return
			}
			frames = frames[:0]
			for i := range f.Frames {
				frames = append(frames, &f.Frames[i])
			}
		}
		for _, f := range frames {
			if !s.route(cn, f) {
				return
			}
		}
	}
}

// forget drops a connection refused before joining from the pending set.
func (s *Server) forget(cn *conn) {
	s.mu.Lock()
	delete(s.pending, cn)
	s.mu.Unlock()
}

// noteRefusal keeps the last refusal that failed no agent, for the message
// of an agent that never connects.
func (s *Server) noteRefusal(err error) {
	s.mu.Lock()
	s.refusal = err.Error()
	s.mu.Unlock()
}

// route hands a frame to the agent it is for; false ends the connection.
// What an agent sends for one step (from one done to the next) is bounded
// (MaxStepFrames, MaxStepBytes), and a step ends only after it began (a
// done needs its tick): so the agent's queue holds at most two steps of
// bounded frames, and a violation fails the agent, deterministically.
func (s *Server) route(cn *conn, f *Frame) bool {
	var to *Agent
	if len(cn.agents) == 1 {
		if a := cn.agents[0]; a.role == 1 || int(a.node.ID) == f.Vehicle {
			to = a
		}
	} else {
		to = cn.byID[f.Vehicle]
	}
	if to == nil || f.Type == TypeHello {
		err := fmt.Errorf("protocol error: a %s frame for node %d, which this connection does not step", f.Type, f.Vehicle)
		if cn.batch {
			err = &RelayFault{Relay: cn.describe(), Err: err}
		}
		for _, a := range cn.agents {
			a.fail(err)
		}
		return false
	}
	select {
	case <-to.failed:
		return cn.batch // the relay's other agents go on
	default:
	}
	if err := to.count(f); err != nil {
		to.fail(err)
		return cn.batch
	}
	to.in.push(f)
	return true
}

// MaxStepFrames and MaxStepBytes bound what one agent may send for one
// step, from its tick to its done (frames sent after a done count for the
// next step): more is a protocol error that fails the agent. Bytes are
// what the decoded frames hold (Frame.Footprint: payloads, texts, lists, and
// each frame's fixed part). Together with the rule that a done may only
// follow its tick, they bound an agent's queue to two steps' worth.
const (
	MaxStepFrames = 4096
	MaxStepBytes  = 16 << 20
)

// stepCount is what an agent sent since its last done.
type stepCount struct{ frames, bytes int }

// count checks frame f against the agent's step bounds (the connection's
// reader calls it, before queueing f).
func (a *Agent) count(f *Frame) error {
	node := func() string {
		if a.role == 1 {
			return "the network simulator"
		}
		return fmt.Sprintf("node %d", a.node.ID)
	}
	a.step.frames++
	a.step.bytes += f.Footprint()
	switch {
	case a.step.frames > MaxStepFrames:
		return fmt.Errorf("protocol error: %s sent more than %d frames in one step (at most %d per step; docs/protocol.md)", node(), MaxStepFrames, MaxStepFrames)
	case a.step.bytes > MaxStepBytes:
		return fmt.Errorf("protocol error: %s sent more than %d MiB in one step (%d frames so far; at most %d MiB per step; docs/protocol.md)",
			node(), MaxStepBytes>>20, a.step.frames, MaxStepBytes>>20)
	}
	if f.Type == TypeDone || f.Type == TypeNetDone || f.Type == TypeError {
		if a.dones >= a.ticks.Load() {
			return fmt.Errorf("protocol error: a %s frame for %s before its tick (%d ticks sent, %d steps ended): a step ends only after it began", f.Type, node(), a.ticks.Load(), a.dones)
		}
		a.dones++
		a.step = stepCount{}
	}
	return nil
}

// inbox is an agent's queue of frames from its connection. The reader
// never waits on it (one reader may serve a relay's many agents, stepped
// in node order); route's step bounds bound it.
type inbox struct {
	mu    sync.Mutex
	q     []*Frame
	head  int
	ready chan struct{} // poked when a frame comes
}

func newInbox() inbox { return inbox{ready: make(chan struct{}, 1)} }

func (b *inbox) push(f *Frame) {
	b.mu.Lock()
	b.q = append(b.q, f)
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

func (b *inbox) pop() *Frame {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.head == len(b.q) {
		return nil
	}
	f := b.q[b.head]
	b.q[b.head] = nil
	if b.head++; b.head == len(b.q) {
		b.q, b.head = b.q[:0], 0
	}
	return f
}

// next waits for the agent's next frame: it returns it, or nil when the
// agent failed (a.err says why) or expired fired first (timedOut). Frames
// already queued come before a failure.
func (a *Agent) next(expired <-chan time.Time) (f *Frame, timedOut bool) {
	for {
		if f := a.in.pop(); f != nil {
			return f, false
		}
		select {
		case <-a.in.ready:
		case <-a.failed:
			if f := a.in.pop(); f != nil {
				return f, false
			}
			return nil, false
		case <-expired:
			return nil, true
		}
	}
}

// refused reports a refused hello that carried the run's token (a
// stranger's is only counted, in serve): the agents it names that are
// still waiting for their connection fail at once with the reason (the
// client is that vehicle's process, and its user needs the reason now,
// not a connect timeout later). A hello that names no waiting agent is
// logged, and the reason goes into the message of agents that never
// connect.
func (s *Server) refused(cn *conn, h *Frame, err error) {
	var blamed []*Agent
	s.mu.Lock()
	if h != nil && h.Type == TypeHello {
		if h.Role == 1 {
			if a := s.netAgent; a != nil && (a.conn == nil || a.conn == cn) {
				blamed = append(blamed, a)
			}
		} else {
			seen := map[int]bool{}
			for _, id := range h.Vehicles {
				if a := s.agents[id]; a != nil && !seen[id] && (a.conn == nil || a.conn == cn) {
					seen[id] = true
					blamed = append(blamed, a)
				}
			}
		}
	}
	if len(blamed) == 0 {
		s.refusal = cn.addr + ": " + err.Error()
	}
	s.mu.Unlock()
	who := "a client"
	if h != nil && h.Name != "" && len(h.Name) <= maxHelloName {
		who = fmt.Sprintf("client %q", h.Name)
	}
	if cn.pid > 0 {
		who += fmt.Sprintf(" (pid %d)", cn.pid)
	}
	s.cfg.Log.Warn("extern: hello refused", "from", cn.name, "client", who, "err", err)
	for _, a := range blamed {
		what := fmt.Sprintf("node %d", a.node.ID)
		if a.role == 1 {
			what = "the network simulator (role 1)"
		}
		a.fail(fmt.Errorf("%s connected for %s but was refused: %w", who, what, err))
	}
}

// maxHelloName bounds the free-text name in a hello.
const maxHelloName = 64

// join checks an authenticated hello (ReadHello checked its token) and
// binds its agents to the connection.
func (s *Server) join(cn *conn, h *Frame) error {
	if h.Version != Version {
		return fmt.Errorf("protocol version %d not served (this skyloop speaks version %d)", h.Version, Version)
	}
	if len(h.Name) > maxHelloName {
		return fmt.Errorf("a name of %d bytes (at most %d)", len(h.Name), maxHelloName)
	}
	if h.Role == 1 {
		s.mu.Lock()
		a := s.netAgent
		switch {
		case a == nil:
			s.mu.Unlock()
			return errors.New("role 1 (network simulator) not wanted: the scenario's network backend is not extern")
		case a.conn != nil:
			s.mu.Unlock()
			return errors.New("the network simulator is already connected")
		}
		a.conn = cn
		cn.agents = []*Agent{a}
		s.joined(cn)
		s.mu.Unlock()
		if err := cn.write(s.welcome(nil), 5*time.Second); err != nil {
			return fmt.Errorf("sending the welcome: %w", err)
		}
		close(a.joined)
		s.poke()
		return nil
	}
	if h.Role != 0 {
		return fmt.Errorf("role %d not served: 0 is mission logic, 1 the network simulator", h.Role)
	}
	if len(h.Vehicles) == 0 {
		return errors.New("hello names no vehicles")
	}
	if len(h.Vehicles) > len(s.agents) {
		return fmt.Errorf("hello names %d vehicles; the run has %d external agents", len(h.Vehicles), len(s.agents))
	}
	s.mu.Lock()
	var list []*Agent
	seen := make(map[int]bool, len(h.Vehicles))
	for _, id := range h.Vehicles {
		a := s.agents[id]
		if a == nil {
			s.mu.Unlock()
			return fmt.Errorf("node %d has no extern behaviour in this scenario", id)
		}
		if seen[id] {
			s.mu.Unlock()
			return fmt.Errorf("hello names node %d twice", id)
		}
		seen[id] = true
		if a.conn != nil {
			s.mu.Unlock()
			return fmt.Errorf("node %d (%s) is already connected", id, a.node.Name)
		}
		list = append(list, a)
	}
	for _, a := range list {
		a.conn = cn
	}
	cn.agents = list
	if len(list) > 1 {
		cn.byID = make(map[int]*Agent, len(list))
		for _, a := range list {
			cn.byID[int(a.node.ID)] = a
		}
	}
	if h.Name != "" {
		cn.name = h.Name
	}
	if h.Batch {
		cn.batch = true
		s.batched = append(s.batched, cn)
	}
	s.joined(cn)
	s.mu.Unlock()
	if err := cn.write(s.welcome(list), 5*time.Second); err != nil {
		return fmt.Errorf("sending the welcome: %w", err)
	}
	for _, a := range list {
		close(a.joined)
	}
	s.poke()
	return nil
}

// joined moves a connection from the pending set to the joined ones
// (s.mu held).
func (s *Server) joined(cn *conn) {
	delete(s.pending, cn)
	s.conns = append(s.conns, cn)
}

func (s *Server) welcome(list []*Agent) *Frame {
	w := &Frame{Type: TypeWelcome, Version: Version, TickNs: s.cfg.Tick, Origin: &Vec3{s.cfg.Origin.Lat, s.cfg.Origin.Lon, s.cfg.Origin.Alt}}
	for _, n := range s.cfg.Nodes {
		w.Nodes = append(w.Nodes, NodeInfo{ID: int(n.ID), Name: n.Name, Group: n.Group, Index: n.Index, Vehicle: s.cfg.Vehicle(int(n.ID))})
	}
	for _, a := range list {
		w.Vehicles = append(w.Vehicles, int(a.node.ID))
	}
	return w
}

// Stop tells every client the run is over, gives launched processes a
// moment to exit, then stops them (SIGTERM, then SIGKILL), and removes the
// socket.
func (s *Server) Stop(reason string) { s.stop(reason, false) }

// stop is Stop; failed marks the end frames (the run failed).
func (s *Server) stop(reason string, failed bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	s.gate.Close()
	conns := append([]*conn(nil), s.conns...)
	var pending []*conn
	for cn := range s.pending {
		pending = append(pending, cn)
	}
	s.mu.Unlock()
	for _, c := range pending {
		c.c.Close() // a hello in progress: its reader returns
	}
	for _, c := range conns {
		c.write(&Frame{Type: TypeEnd, Reason: reason, Failed: failed}, 500*time.Millisecond)
	}
	if s.unixLn != nil {
		s.unixLn.Close()
	}
	if s.tcpLn != nil {
		s.tcpLn.Close()
	}
	if s.tlsLn != nil {
		s.tlsLn.Close()
	}
	// Give the processes a moment to exit on their own, then SIGTERM
	// their process groups, then SIGKILL.
	grace := time.NewTimer(2 * time.Second)
	defer grace.Stop()
	for _, p := range s.procs {
		select {
		case <-p.done:
			continue
		case <-grace.C:
		}
		break
	}
	var left []*proc
	for _, p := range s.procs {
		select {
		case <-p.done:
		default:
			syscall.Kill(-p.pid, syscall.SIGTERM)
			left = append(left, p)
		}
	}
	kill := time.NewTimer(2 * time.Second)
	defer kill.Stop()
	killed := false
	for _, p := range left {
		if !killed {
			select {
			case <-p.done:
				continue
			case <-kill.C:
				killed = true
			}
		}
		syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.done
	}
	for _, c := range conns {
		c.c.Close()
	}
	s.wg.Wait()
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
		s.owner.Unlock()
	}
}

// tmpPrefix names the servers' socket directories in the temporary
// directory.
const tmpPrefix = "skyloop-extern-"

// startPrefix names a socket directory until its owner lock is held.
const startPrefix = "skyloop-starting-extern-"

// removeStaleDirs removes the socket directories that servers of skyloop
// processes that died (killed, crashed) left in dir: those whose owner lock
// exists and is free.
func removeStaleDirs(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(filepath.Join(p, ".owner.lock")); err != nil {
			continue // not ours, or an older skyloop's: leave it
		}
		l, err := record.TryLock(filepath.Join(p, "owner"))
		if err != nil {
			continue // its server is running
		}
		os.RemoveAll(p)
		l.Unlock()
	}
}

// tailBuffer keeps the last bytes a process wrote to its standard error,
// for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	t.mu.Unlock()
	return len(p), nil
}

func (t *tailBuffer) lastLines() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(bytes.ToValidUTF8(t.b, nil))), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "; last lines of its stderr:\n  " + strings.Join(lines, "\n  ")
}

// Close implements edge.Service: it tells the clients why the run ended,
// then stops their processes (Stop).
func (s *Server) Close(cause error) error {
	why := "the run is over"
	if cause != nil {
		why = "the run failed: " + cause.Error()
	}
	s.stop(why, cause != nil)
	if r := s.strangers.Report(); r.Total > maxLoggedRefusals {
		s.cfg.Log.Warn("extern: connections refused before authentication during the run", "refused", r.String())
	}
	return nil
}

// serviceKey names the run's extern server among the edge services.
const serviceKey = "extern"

// server returns the run's extern server, made from the run environment
// by the first component that asks.
func server(env *edge.Env) *Server {
	return env.Service(serviceKey, func() edge.Service {
		cfg := Config{Tick: int64(env.Tick), Nodes: env.Nodes, Origin: env.Origin, Dir: env.Dir, Log: env.Log,
			Vehicle: env.IsVehicle, Ready: env.Ready, Listen: env.Listen, Remote: env.Remote}
		if env.Output != nil {
			cfg.Output = env.Output
		}
		return NewServer(cfg)
	}).(*Server)
}
