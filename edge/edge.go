// Package edge is the boundary between a run's deterministic core and the
// world outside it: sockets, processes, devices and files. The core
// (package engine) steps vehicles, agents and the network and never touches
// any of these; the parts of a run that do (the server external agents
// connect to, a vehicle's MAVLink UDP link, the TAP bridge of a network
// namespace) implement Component, and the runner (package runner) opens
// them with the run's Env before the first tick and closes them after the
// last, in reverse order.
//
// The lifecycle of every component of a run, in order:
//
//  1. Build: parameters decoded and checked, the component constructed
//     (engine.Build; nothing outside the process is touched).
//  2. Start: behaviours learn their node (agent.Behavior.Start).
//  3. Open: edge components connect to the outside world (Component.Open),
//     in node order, the network backend first; shared services they asked
//     for (Env.Service) are started once every component is open.
//  4. Step: the kernel's ticks (engine.Run.Run).
//  5. Finish: behaviours report for summary.json (agent.Finisher).
//  6. Close: services, then components, in reverse order of opening, also
//     when the run failed or was stopped.
package edge

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"

	"skyloop/agent"
	"skyloop/geom"
	"skyloop/sim"
)

// Component is implemented by the parts of a run that reach outside the
// simulation.
type Component interface {
	// Open connects the component to the outside world with what the run
	// offers. A component that finds nothing to do (a MAVLink vehicle of a
	// run without UDP links) returns nil.
	Open(env *Env) error
	// Close releases what Open took. It is called once for every component
	// whose Open was called, also when Open failed.
	Close() error
}

// Service is something several components share, such as the server that
// external agents connect to. The first component that asks for it with
// Env.Service makes it; the runner starts it once every component is open
// and closes it before them.
type Service interface {
	// Start begins serving; it may wait (for external programs to
	// connect, say).
	Start() error
	// Close ends the service; cause is why the run ended (nil: it
	// finished).
	Close(cause error) error
}

// Namespace is what a vehicle's network namespace offers its components
// (isolation: netns).
type Namespace struct {
	// Name is the namespace's name (ip netns).
	Name string
	// TAP is the vehicle's TAP device (the runner's isolation opens it);
	// the component that takes it sets the field to nil and owns it from
	// then on: it reads and writes whole frames, and closes it.
	TAP io.ReadWriteCloser
	// HostIP and NSHost are the two ends of the host_veth link: the host
	// side, where the vehicle's autopilot can listen, and the namespace
	// side, where its companion programs run.
	HostIP, NSHost netip.Addr
}

// Env is what the runner offers the components of one run.
type Env struct {
	// Tick is the kernel tick.
	Tick sim.Duration
	// Nodes lists the run's nodes in id order.
	Nodes []agent.NodeRef
	// IsVehicle reports whether node id is a vehicle.
	IsVehicle func(id int) bool
	// Origin is the WGS84 position of the scenario's local origin.
	Origin geom.Geodetic
	// Dir is where launched programs start: the scenario file's directory.
	Dir string
	// Log receives diagnostics.
	Log *slog.Logger
	// Realtime is the run's real-time factor (0: as fast as possible).
	Realtime float64
	// Output opens a file in the run directory written straight through
	// (logs of launched programs); it returns nil and no error when the
	// run writes no files.
	Output func(name string) (io.Writer, error)
	// Create creates a file in the run directory, buffered (a network
	// backend's capture or counters); write errors surface when the run
	// directory is committed. It is nil when the run writes no files.
	Create func(name string) (io.Writer, error)
	// WorkDir creates a directory in the run directory (procs/px4-0, say)
	// and returns its path, for launched programs that keep their own
	// files; nil when the run writes no files.
	WorkDir func(name string) (string, error)
	// TempDir makes a temporary directory for a launched program called
	// name when the run writes no files (WorkDir is nil), and returns its
	// path and what removes it. The runner sets it.
	TempDir func(name string) (dir string, remove func(), err error)
	// Ready, when set, is told where external programs connect (the
	// extern server's Unix socket, TCP address and token).
	Ready func(socket, addr, token string)
	// Listen, when set, is where the extern server also listens for
	// agents and relays on other hosts (TLS; skyloop run --listen).
	Listen string
	// Remote, when set, is told the remote address, the TLS
	// certificate's fingerprint and the token once the server listens
	// there.
	Remote func(addr, fingerprint, token string)

	namespaces []*Namespace
	services   map[string]Service
	order      []Service
}

// SetNamespaces gives the components the vehicles' namespaces, indexed by
// node id (isolation: netns).
func (e *Env) SetNamespaces(ns []*Namespace) { e.namespaces = ns }

// Namespace returns node id's namespace, or nil when the run has none.
func (e *Env) Namespace(id int) *Namespace {
	if id < 0 || id >= len(e.namespaces) {
		return nil
	}
	return e.namespaces[id]
}

// Service returns the run's service named key, making it with mk the first
// time.
func (e *Env) Service(key string, mk func() Service) Service {
	if s, ok := e.services[key]; ok {
		return s
	}
	if e.services == nil {
		e.services = map[string]Service{}
	}
	s := mk()
	e.services[key] = s
	e.order = append(e.order, s)
	return s
}

// HasService reports whether a component asked for the service key.
func (e *Env) HasService(key string) bool {
	_, ok := e.services[key]
	return ok
}

// Services returns the services made so far, in the order they were made.
func (e *Env) Services() []Service { return e.order }

// ProcFiles are where a program the run launches keeps its files: its
// working directory procs/<name>/ and its output procs/<name>.out and
// .err in the run directory (a temporary directory and discarded output
// when the run writes no files).
type ProcFiles struct {
	Dir            string
	Stdout, Stderr io.Writer
	remove         func() // removes a temporary Dir
}

// Cleanup removes the working directory when it is a temporary one.
func (p *ProcFiles) Cleanup() {
	if p != nil && p.remove != nil {
		p.remove()
	}
}

// ProcFiles makes the files of a launched program called name (e.g.
// "px4-0"), its working directory with WorkDir, or TempDir when the run
// writes no files.
func (e *Env) ProcFiles(name string) (*ProcFiles, error) {
	p := &ProcFiles{}
	var err error
	switch {
	case e.WorkDir != nil:
		p.Dir, err = e.WorkDir("procs/" + name)
	case e.TempDir != nil:
		p.Dir, p.remove, err = e.TempDir(name)
	default:
		err = errors.New("the run offers no directory (neither WorkDir nor TempDir is set)")
	}
	if err != nil {
		return nil, fmt.Errorf("the working directory of %s: %w", name, err)
	}
	if p.Stdout, err = e.File("procs/" + name + ".out"); err != nil {
		p.Cleanup()
		return nil, err
	}
	if p.Stderr, err = e.File("procs/" + name + ".err"); err != nil {
		p.Cleanup()
		return nil, err
	}
	return p, nil
}

// File opens name with Output, or returns a writer that discards when the
// run writes no files.
func (e *Env) File(name string) (io.Writer, error) {
	if e.Output == nil {
		return io.Discard, nil
	}
	w, err := e.Output(name)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	if w == nil {
		return io.Discard, nil
	}
	return w, nil
}
