package firmware

import (
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"syscall"
	"time"

	"skyloop/edge"
	"skyloop/engine"
	"skyloop/orchestrate"
	"skyloop/sim"
	"skyloop/transcript"
	"skyloop/vehicle"
)

// StopGrace is how long a firmware process gets to shut down after
// SIGTERM.
const StopGrace = 3 * time.Second

// Bridge is the part of one vehicle's firmware controller that is not its
// protocol: it names the instance in errors, launches and stops the
// firmware's process with its files under procs/, records the transcript,
// refuses behaviours' commands and keeps the first error. A controller
// holds one and forwards Command and Err to it.
type Bridge struct {
	// Key is the scenario key of the bridge's parameters (px4,
	// ardupilot); it also names the instance's files under procs/
	// (<key>-<instance>).
	Key string
	// Stack names the flight stack in messages (PX4, ArduPilot).
	Stack string
	// Firmware names the program (PX4, ArduCopter).
	Firmware string
	// Proto is the simulator link's transport (TCP, UDP).
	Proto string
	// Inst is the firmware instance: the vehicle's node id.
	Inst int
	// Name is the vehicle's name.
	Name string
	// Port is the instance's simulator port.
	Port int

	// Log is the run's log (a discarding one before Open).
	Log *slog.Logger
	// Proc is the launched firmware, or nil.
	Proc *orchestrate.Child
	// Files are the launched firmware's working directory and output
	// files, or nil.
	Files *edge.ProcFiles
	// Transcript records the exchange when the scenario asks for it, or
	// is nil.
	Transcript *transcript.Writer

	err error
	// ground contact, for Ground
	contactSeen bool
	onGround    bool     // the contact state last logged
	changing    bool     // the contact differs from onGround since changeAt
	changeAt    sim.Time // when it began to differ
}

// GroundHold is how long the landing-gear contact must keep a new state
// before Ground logs it: a touchdown's bounces log one event.
const GroundHold = 300 * sim.Millisecond

// Ground logs the vehicle leaving the ground ("takeoff") and coming back
// to it ("touchdown"), with the truth's position (x y, m), from the
// landing-gear contact held GroundHold: what the stand-in logs of its own
// flight, for a firmware whose own view travels over MAVLink only. The
// state at the first call is the start, not an event.
func (b *Bridge) Ground(t sim.Time, s *vehicle.Sensors, ev *vehicle.Events) {
	if !b.contactSeen {
		b.contactSeen, b.onGround = true, s.Contact
		return
	}
	if s.Contact == b.onGround {
		b.changing = false
		return
	}
	if !b.changing {
		b.changing, b.changeAt = true, t
		return
	}
	if t.Sub(b.changeAt) < GroundHold {
		return
	}
	b.onGround, b.changing = s.Contact, false
	name := "takeoff"
	if s.Contact {
		name = "touchdown"
	}
	ev.Addf(t, name, "%.2f %.2f", s.Truth.Pos.X, s.Truth.Pos.Y)
}

// Who names the instance in messages, e.g. "PX4 instance 0 (iris-0, TCP
// 4560)".
func (b *Bridge) Who() string {
	return fmt.Sprintf("%s instance %d (%s, %s %d)", b.Firmware, b.Inst, b.Name, b.Proto, b.Port)
}

// Open takes the run's log from env and, with record, opens the
// transcript procs/<key>-<instance>.transcript.gz.
func (b *Bridge) Open(env *edge.Env, record bool) error {
	b.Log = env.Log
	if b.Log == nil {
		b.Log = slog.New(slog.DiscardHandler)
	}
	if record {
		w, err := env.File(fmt.Sprintf("procs/%s-%d.transcript.gz", b.Key, b.Inst))
		if err != nil {
			return err
		}
		b.Transcript = transcript.NewWriter(w)
	}
	return nil
}

// ListenError wraps the error of listening on the simulator port; a port
// in use is an engine.OptionError that names the key to change.
func (b *Bridge) ListenError(err error) error {
	err = fmt.Errorf("%s: listening for %s: %w", b.Name, b.Firmware, err)
	if errors.Is(err, syscall.EADDRINUSE) {
		err = &engine.OptionError{Err: fmt.Errorf("%w (another simulator or skyloop run uses it; set %s.port)", err, b.Key)}
	}
	return err
}

// Wait logs that the bridge waits for a firmware started by hand.
func (b *Bridge) Wait() {
	b.Log.Info("waiting for "+b.Firmware, "vehicle", b.Name, "port", b.Port)
}

// Launch makes the instance's files under procs/ and starts the command
// that command returns for the working directory wd (its errors are
// returned as they are).
func (b *Bridge) Launch(env *edge.Env, command func(wd string) (*exec.Cmd, error)) error {
	var err error
	b.Files, err = env.ProcFiles(fmt.Sprintf("%s-%d", b.Key, b.Inst))
	if err != nil {
		return fmt.Errorf("%s: %w", b.Name, err)
	}
	wd := b.Files.Dir
	cmd, err := command(wd)
	if err != nil {
		return err
	}
	b.Proc, err = orchestrate.StartChild(b.Firmware, cmd, b.Files.Stdout, b.Files.Stderr, nil)
	if err != nil {
		return fmt.Errorf("%s: starting %s: %w", b.Name, b.Firmware, err)
	}
	b.Log.Info(b.Firmware+" started", "vehicle", b.Name, "instance", b.Inst, "pid", b.Proc.PID(), "dir", wd)
	return nil
}

// Close stops the firmware, ends the transcript and removes a temporary
// working directory.
func (b *Bridge) Close() error {
	var errs []error
	if b.Proc != nil {
		errs = append(errs, b.Proc.Stop(StopGrace))
	}
	errs = append(errs, b.Transcript.Close())
	b.Files.Cleanup()
	return errors.Join(errs...)
}

// Command implements vehicle.Controller's Command for a firmware that takes
// its commands over MAVLink only: the first command a behaviour gives
// ends the run with an error that says so.
func (b *Bridge) Command(cmd vehicle.Command) {
	if cmd.Kind == vehicle.CmdNone || cmd.Kind == vehicle.CmdHeartbeat || b.err != nil {
		return
	}
	b.err = fmt.Errorf("a behaviour commanded %s, but real %s takes commands over MAVLink only: "+
		"fly it with mavlink_gcs, an external ground station or an agent speaking MAVLink", cmd.Kind, b.Stack)
}

// Err returns why the controller stopped, or nil.
func (b *Bridge) Err() error { return b.err }

// Fail keeps err, named with the instance and followed by the tail of the
// firmware's output, unless an error is kept already.
func (b *Bridge) Fail(err error) {
	if b.err == nil {
		b.err = fmt.Errorf("%s: %w", b.Who(), err)
		if b.Proc != nil {
			b.err = fmt.Errorf("%w%s", b.err, b.Proc.Tail())
		}
	}
}
