package extern

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"skyloop/agent"
	"skyloop/edge"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Params configure the extern behaviour.
type Params struct {
	// Command starts the agent's process: a shell command template with
	// {id}, {name}, {group} and {index}; empty = the process connects on
	// its own with the token skyloop prints. A template without per-node
	// fields starts one process for every node that uses it.
	Command string `yaml:"command" json:"command"`
	// Period is how often the agent may be stepped (it chooses within
	// that, with wake_at); 0 = every tick.
	Period sim.Duration `yaml:"period" json:"period"`
	// Timeout is the wall-clock time an agent has to answer a tick.
	Timeout sim.Duration `yaml:"timeout" json:"timeout"`
	// ConnectTimeout is the wall-clock time the process has to connect.
	ConnectTimeout sim.Duration `yaml:"connect_timeout" json:"connect_timeout"`
	// OnFailure says what a crash, hang or protocol error does: abort the
	// run, or continue with the agent marked dead.
	OnFailure string `yaml:"on_failure" json:"on_failure"`
	// Ports, when set, limits the deliveries passed on to these ports.
	Ports []uint16 `yaml:"ports" json:"ports"`
}

// Validate checks the parameters.
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Period < 0 {
		bad["period"] = fmt.Sprintf("must be >= 0 (0 = every tick), got %v", p.Period)
	}
	if p.Timeout <= 0 {
		bad["timeout"] = fmt.Sprintf("must be a positive duration, got %v", p.Timeout)
	}
	if p.ConnectTimeout <= 0 {
		bad["connect_timeout"] = fmt.Sprintf("must be a positive duration, got %v", p.ConnectTimeout)
	}
	if p.OnFailure != "abort" && p.OnFailure != "continue" {
		bad["on_failure"] = fmt.Sprintf("must be abort or continue, got %q", p.OnFailure)
	}
	if strings.Count(p.Command, "{")-strings.Count(p.Command, "{id}")-strings.Count(p.Command, "{name}")-
		strings.Count(p.Command, "{group}")-strings.Count(p.Command, "{index}") != 0 {
		bad["command"] = fmt.Sprintf("unknown placeholder in %q: the template knows {id}, {name}, {group} and {index}", p.Command)
	}
	return bad
}

// Behavior is the in-run proxy of an external agent. In the agent phase
// the engine calls Prepare on every due proxy first (each sends its
// BEGIN-TICK), then Step in node order (each waits for its END-TICK and
// applies what the agent sent), so external agents step in parallel while
// their effects enter the run in a fixed order.
type Behavior struct {
	p      *Params
	ag     *Agent
	ctx    *agent.Context
	period sim.Duration

	inbox      []Delivery
	wakeAt     sim.Time
	wakeOnRecv bool
	pending    bool
	dead       bool
	timer      *time.Timer

	// Stats for summary.json.
	steps   int
	sends   int
	cmds    int
	waitSum time.Duration
}

func (b *Behavior) bind(a *Agent) { b.ag = a }

// Start implements agent.Behavior.
func (b *Behavior) Start(ctx *agent.Context) error {
	b.ctx = ctx
	b.period = b.p.Period
	if b.period == 0 {
		b.period = ctx.Tick()
	}
	return nil
}

// Schedule implements agent.Behavior.
func (b *Behavior) Schedule() (period, offset sim.Duration) { return b.period, 0 }

// Receive implements agent.Receiver: deliveries wait for the agent's next
// step.
func (b *Behavior) Receive(ctx *agent.Context, m *agent.Message) {
	if b.dead || b.ag == nil {
		return
	}
	if len(b.p.Ports) > 0 {
		ok := false
		for _, p := range b.p.Ports {
			ok = ok || p == m.Port
		}
		if !ok {
			return
		}
	}
	b.inbox = append(b.inbox, Delivery{Src: int(m.Src), Dst: int(m.Dst), Port: int(m.Port), Kind: m.Kind.String(), Seq: m.Seq,
		TSend: int64(m.TSend), TArrive: int64(m.TArrive), Size: m.Size, Payload: append([]byte(nil), m.Payload...)})
}

// Prepare sends the agent its BEGIN-TICK when it is due.
func (b *Behavior) Prepare(ctx *agent.Context) {
	if b.dead || b.ag == nil || b.ag.srv.Err() != nil {
		return
	}
	now := ctx.Now()
	if now < b.wakeAt && !(b.wakeOnRecv && len(b.inbox) > 0) {
		return
	}
	f := &Frame{Type: TypeTick, Vehicle: int(ctx.ID()), T: int64(now), Deliveries: b.inbox}
	if ctx.HasVehicle() {
		t := ctx.Telemetry()
		f.Telemetry = &Telemetry{Pos: [3]float64{t.Pos.X, t.Pos.Y, t.Pos.Z}, Vel: [3]float64{t.Vel.X, t.Vel.Y, t.Vel.Z},
			Yaw: t.Yaw, Mode: t.Mode.String(), Armed: t.Armed, Landed: t.Landed, Battery: t.BatteryRemaining}
	}
	if err := b.ag.srv.sendTick(b.ag, f, time.Duration(b.p.Timeout)); err != nil {
		b.ag.fail(fmt.Errorf("sending tick %v: %w", now, err))
		b.handle(b.ag.err)
		return
	}
	b.inbox = b.inbox[:0]
	b.pending = true
}

// Step waits for the agent's END-TICK and applies its sends, commands and
// events in the order it sent them.
func (b *Behavior) Step(ctx *agent.Context) {
	if !b.pending {
		return
	}
	b.pending = false
	b.ag.srv.flushBatches(time.Duration(b.p.Timeout))
	b.steps++
	start := time.Now()
	defer func() { b.waitSum += time.Since(start) }()
	limit := time.Duration(b.p.Timeout)
	if b.timer == nil {
		b.timer = time.NewTimer(limit)
	} else {
		b.timer.Reset(limit)
	}
	defer b.timer.Stop()
	for {
		f, timedOut := b.ag.next(b.timer.C)
		switch {
		case f != nil:
			done, err := b.apply(ctx, f)
			if err != nil {
				b.ag.fail(err)
				b.handle(b.ag.err)
				return
			}
			if done {
				return
			}
		case !timedOut:
			b.handle(b.ag.err)
			return
		default:
			if c := b.ag.conn; c.batch {
				// The relay's fault: all its agents fail now, rather than
				// each after its own timeout.
				err := &RelayFault{Relay: c.describe(), Err: fmt.Errorf("no answer for node %d within %v of wall-clock time at t=%v (relay frozen, or an agent behind it hung past the relay's --timeout?)",
					b.ag.node.ID, b.p.Timeout, ctx.Now())}
				for _, a := range c.agents {
					a.fail(err)
				}
			} else {
				b.ag.fail(fmt.Errorf("no END-TICK within %v of wall-clock time at t=%v (hung?)", b.p.Timeout, ctx.Now()))
			}
			b.handle(b.ag.err)
			return
		}
	}
}

// handle applies the failure policy.
func (b *Behavior) handle(err error) {
	if b.dead {
		return
	}
	if e := b.failure(err); e != nil {
		b.ag.srv.setFatal(e)
		if b.ctx != nil {
			b.ctx.Fail(e)
		}
	}
}

// Open implements edge.Component: the node joins the run's extern server,
// which launches its process and waits for it when the runner starts it.
func (b *Behavior) Open(env *edge.Env) error {
	server(env).Add(b.ctx.Ref(), b)
	return nil
}

// Close implements edge.Component; the server stops the process.
func (b *Behavior) Close() error { return nil }

// failure marks the agent dead and returns the error that ends the run
// under the abort policy (nil under continue).
func (b *Behavior) failure(err error) error {
	b.dead = true
	msg := b.ag.describe() + ": " + err.Error()
	var rf *RelayFault
	if errors.As(err, &rf) {
		// The relay's fault: named first, with its nodes.
		msg = err.Error() + " (external agent " + b.ag.node.Name + " stops with it)"
	}
	if b.ctx != nil {
		b.ctx.Event("extern_failed", msg)
	}
	if b.p.OnFailure == "continue" {
		b.ag.srv.cfg.Log.Warn("extern agent marked dead; the run goes on", "agent", b.ag.node.Name, "err", err)
		return nil
	}
	return errors.New(msg)
}

// apply carries out one frame from the agent; done is true at END-TICK.
func (b *Behavior) apply(ctx *agent.Context, f *Frame) (done bool, err error) {
	switch f.Type {
	case TypeDone:
		b.wakeAt = ctx.Now().Add(1) // the next step
		if f.WakeAt > int64(ctx.Now()) {
			b.wakeAt = sim.Time(f.WakeAt)
		}
		b.wakeOnRecv = f.WakeOnRecv
		return true, nil
	case TypeSend:
		if f.Dst == nil {
			return false, errors.New("protocol error: send without dst (-1 for broadcast)")
		}
		kind := netsim.KindData
		if f.Kind != "" {
			k, ok := netsim.KindByName(f.Kind)
			if !ok {
				return false, fmt.Errorf("protocol error: unknown packet kind %q", f.Kind)
			}
			kind = k
		}
		if f.Port < 0 || f.Port > 65535 {
			return false, fmt.Errorf("protocol error: port %d", f.Port)
		}
		dst := netsim.NodeID(*f.Dst)
		if *f.Dst < 0 {
			dst = netsim.Broadcast
		}
		b.sends++
		at := ctx.Now()
		if f.At != 0 {
			at = sim.Time(f.At)
		}
		if err := ctx.SendAt(at, agent.Message{Dst: dst, Port: uint16(f.Port), Kind: kind, Size: f.Size, Payload: f.Payload}); err != nil {
			return false, fmt.Errorf("protocol error: %w", err)
		}
		return false, nil
	case TypeCommand:
		c, err := command(f)
		if err != nil {
			return false, err
		}
		b.cmds++
		ctx.Command(c)
	case TypeEvent:
		name, detail, err := eventText(f.Name, f.Detail)
		if err != nil {
			return false, err
		}
		ctx.Event(name, detail)
	case TypeError:
		// A relay reports that the agent behind it failed.
		reason := strings.ToValidUTF8(f.Reason, "\uFFFD")
		if len(reason) > MaxEventDetail {
			reason = reason[:MaxEventDetail] + truncMark
		}
		return false, errors.New(reason)
	default:
		return false, fmt.Errorf("protocol error: a %s frame during a step", f.Type)
	}
	return false, nil
}

// MaxEventName and MaxEventDetail bound the text of an agent's event, which
// ends up in events.csv: a longer name is a protocol error, a longer detail
// is cut (at a character boundary) and marked.
const (
	MaxEventName   = 64
	MaxEventDetail = 4096
)

// truncMark ends a detail cut to MaxEventDetail bytes.
const truncMark = " [truncated]"

// eventText checks an event's name and bounds its detail; both come out
// valid UTF-8 (invalid bytes become U+FFFD).
func eventText(name, detail string) (string, string, error) {
	if len(name) > MaxEventName {
		return "", "", fmt.Errorf("protocol error: event name of %d bytes (at most %d): %.64q...", len(name), MaxEventName, name)
	}
	name = strings.ToValidUTF8(name, "\uFFFD")
	if name == "" {
		name = "extern"
	}
	detail = strings.ToValidUTF8(detail, "\uFFFD")
	if len(detail) > MaxEventDetail {
		cut := MaxEventDetail - len(truncMark)
		for cut > 0 && !utf8.RuneStart(detail[cut]) {
			cut--
		}
		detail = detail[:cut] + truncMark
	}
	return name, detail, nil
}

func vec(p *Vec3, what string) (geom.Vec3, error) {
	if p == nil {
		return geom.Vec3{}, fmt.Errorf("protocol error: command without %s", what)
	}
	return geom.V(p[0], p[1], p[2]), nil
}

// command converts a command frame and checks that its numbers are
// plausible (vehicle.Command.Validate).
func command(f *Frame) (vehicle.Command, error) {
	c := vehicle.Command{Yaw: math.NaN(), Speed: f.Speed}
	if f.Yaw != nil {
		c.Yaw = *f.Yaw
	}
	var err error
	switch f.Cmd {
	case "arm":
		c.Kind = vehicle.CmdArm
	case "disarm":
		c.Kind = vehicle.CmdDisarm
	case "takeoff":
		c.Kind, c.Alt = vehicle.CmdTakeoff, f.Alt
	case "goto":
		c.Kind = vehicle.CmdGoto
		c.Pos, err = vec(f.Pos, "pos")
	case "velocity":
		c.Kind = vehicle.CmdVelocity
		c.Vel, err = vec(f.Vel, "vel")
	case "hold":
		c.Kind = vehicle.CmdHold
	case "land":
		c.Kind = vehicle.CmdLand
	case "rtl":
		c.Kind = vehicle.CmdRTL
	default:
		err = fmt.Errorf("protocol error: unknown command %q (want arm, disarm, takeoff, goto, velocity, hold, land or rtl)", f.Cmd)
	}
	if err == nil {
		if verr := c.Validate(); verr != nil {
			err = fmt.Errorf("protocol error: %s command: %w", f.Cmd, verr)
		}
	}
	return c, err
}

// Finish implements agent.Finisher.
func (b *Behavior) Finish(ctx *agent.Context) map[string]any {
	out := map[string]any{"steps": b.steps, "sends": b.sends, "commands": b.cmds, "dead": b.dead}
	if b.ag != nil && b.ag.err != nil && b.dead {
		out["failure"] = b.ag.err.Error()
	}
	return out
}

// Preparer marks the behaviour for the engine's two-pass agent phase.
var _ agent.Preparer = (*Behavior)(nil)

// BehaviorSpec is the extern behaviour type (type: extern).
var BehaviorSpec = agent.Spec{
	Name: "extern",
	Doc: "Hands the node to an external process (mission logic in any language) that runs in lockstep over docs/protocol.md: " +
		"`command` starts it (a shell template with {id}, {name}, {group}, {index}; empty = it connects on its own with the printed token); " +
		"it is stepped at most every `period` and chooses when to wake; `timeout` bounds its wall-clock answer time; " +
		"a crash, hang or protocol error aborts the run or, with on_failure: continue, leaves the agent dead.",
	Fixed: true, Vehicle: true,
	Params: func() agent.Params {
		return &Params{Timeout: 10 * sim.Second, ConnectTimeout: 10 * sim.Second, OnFailure: "abort"}
	},
	New: func(p agent.Params) agent.Behavior { return &Behavior{p: p.(*Params)} },
}
