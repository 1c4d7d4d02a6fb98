package ardupilot

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"skyloop/fields"
	"skyloop/firmware"
	"skyloop/sim"
)

// EnvDir is the environment variable that locates the ArduPilot source
// tree (with ArduCopter SITL built in it) when a scenario does not
// (ardupilot.dir).
const EnvDir = "SKYLOOP_ARDUPILOT_DIR"

// BasePort is the physics port of instance 0; instance i sends to
// BasePort+10i.
const BasePort = 9002

// howToBuild ends every message about missing firmware.
const howToBuild = "build ArduCopter SITL with scripts/build-ardupilot-sitl.sh SRC_DIR (see docs/ardupilot.md) " +
	"and set " + EnvDir + " (or ardupilot.dir) to that ArduPilot tree"

// Params are the `ardupilot:` block of a multirotor group flown by
// `controller: ardupilot-sitl`.
type Params struct {
	// Dir is the ArduPilot source tree, with build/sitl/bin/arducopter
	// and Tools/autotest/default_params/copter.parm; empty: the
	// SKYLOOP_ARDUPILOT_DIR environment variable.
	Dir string `yaml:"dir" json:"dir"`
	// Bin is the ArduCopter SITL executable; empty: Dir/build/sitl/bin/arducopter.
	Bin string `yaml:"bin" json:"bin"`
	// Defaults are parameter files loaded at boot, later ones winning;
	// empty: Dir/Tools/autotest/default_params/copter.parm. skyloop adds
	// its own last (the frame, the scenario's params).
	Defaults []string `yaml:"defaults" json:"defaults"`
	// Frame is the airframe: quad (quad-X, ArduCopter's motor order
	// front-right, rear-left, front-left, rear-right).
	Frame string `yaml:"frame" json:"frame"`
	// Launch starts ArduCopter for every vehicle (default). Without it
	// skyloop only listens, for instances started by hand
	// (`arducopter --model JSON -I N`).
	Launch bool `yaml:"launch" json:"launch"`
	// Port is the physics port of instance 0; vehicle i listens on
	// Port+10i (ArduPilot's convention for -I i).
	Port int `yaml:"port" json:"port"`
	// Listen is the address the physics ports listen on (127.0.0.1).
	// Another address (0.0.0.0, a host's) lets ArduCopter instances on
	// other hosts send to it (started by hand with launch: false and
	// --model JSON:<this host>); Peer must then name them.
	Listen string `yaml:"listen" json:"listen"`
	// Peer lists the addresses or networks (comma-separated, e.g.
	// 10.0.0.5 or 10.0.0.0/24) accepted besides loopback: the JSON
	// physics protocol has no authentication. Packets from others are
	// dropped.
	Peer string `yaml:"peer" json:"peer"`
	// Params are ArduPilot parameters set at boot (written to the
	// instance's defaults file).
	Params map[string]float64 `yaml:"params" json:"params"`
	// Speedup is ArduCopter's --speedup: how much faster than the wall
	// clock it may run. In lockstep the answers pace it; a large value
	// lets it go as fast as skyloop answers.
	Speedup float64 `yaml:"speedup" json:"speedup"`
	// ConnectTimeout is how long (wall clock) ArduCopter may take to send
	// its first servo packet.
	ConnectTimeout sim.Duration `yaml:"connect_timeout" json:"connect_timeout"`
	// StepTimeout is how long (wall clock) it may take to answer a state.
	StepTimeout sim.Duration `yaml:"step_timeout" json:"step_timeout"`
	// Period is the time step of ArduPilot's physics: one servo packet and
	// one answer per period.
	Period sim.Duration `yaml:"period" json:"period"`
	// Transcript records the exchange in procs/ardupilot-<i>.transcript.gz.
	Transcript bool `yaml:"transcript" json:"transcript"`
}

// DefaultParams returns the defaults: ArduCopter found through
// SKYLOOP_ARDUPILOT_DIR, quad-X, 1 kHz physics steps (ArduPilot measures
// its 400 Hz loop on them: with 2 ms steps it runs at 333 Hz and refuses to
// arm, "Main loop slow").
func DefaultParams() Params {
	return Params{Frame: "quad", Launch: true, Port: BasePort, Listen: "127.0.0.1", Speedup: 1000,
		ConnectTimeout: 60 * sim.Second, StepTimeout: 10 * sim.Second, Period: sim.Millisecond}
}

// build says where ArduCopter's SITL build is looked for.
var build = firmware.Build{Env: EnvDir, Key: "ardupilot.dir", What: "ArduCopter SITL", HowToBuild: howToBuild}

// LockstepPeriod implements firmware.Params: the physics step.
func (p *Params) LockstepPeriod() sim.Duration { return p.Period }

// Validate checks the parameters and, when ArduCopter is launched, that
// the firmware and the defaults files are where they say; it fills Dir,
// Bin and Defaults when they are empty.
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Frame != "quad" {
		bad["frame"] = fmt.Sprintf("must be quad (quad-X; the only frame skyloop maps yet), got %q", p.Frame)
	}
	firmware.CheckPort(bad, "UDP", p.Port)
	if !(p.Speedup >= 1) || math.IsInf(p.Speedup, 0) {
		bad["speedup"] = fmt.Sprintf("must be >= 1, got %v", p.Speedup)
	}
	firmware.CheckTimeouts(bad, p.ConnectTimeout, p.StepTimeout)
	if p.Period < 500*sim.Microsecond || p.Period > 20*sim.Millisecond {
		bad["period"] = fmt.Sprintf("must be in [0.5ms, 20ms] (ArduCopter's loop runs at 400 Hz), got %v", p.Period)
	}
	firmware.CheckParams(bad, "an ArduPilot parameter name", p.Params)
	if a, ok := firmware.CheckAccess(bad, p.Listen, p.Peer); ok && !a.Listen.Is4() {
		bad["listen"] = fmt.Sprintf("must be an IPv4 address (ArduPilot's JSON interface speaks IPv4), got %s", a.Listen)
	}
	if p.Launch {
		p.locate(bad)
	}
	return bad
}

// locate fills Dir, Bin and Defaults and checks they exist.
func (p *Params) locate(bad fields.Errors) {
	if !build.FindDir(bad, &p.Dir, p.Bin == "" || len(p.Defaults) == 0) {
		return
	}
	key := "dir"
	if p.Bin == "" {
		p.Bin = filepath.Join(p.Dir, "build", "sitl", "bin", "arducopter")
	} else {
		key = "bin"
	}
	if !firmware.Executable(p.Bin) {
		bad[key] = fmt.Sprintf("no ArduCopter SITL executable at %s: %s", p.Bin, howToBuild)
		return
	}
	if len(p.Defaults) == 0 {
		p.Defaults = []string{filepath.Join(p.Dir, "Tools", "autotest", "default_params", "copter.parm")}
	}
	for i, f := range p.Defaults {
		if _, err := os.Stat(f); err != nil {
			bad[fmt.Sprintf("defaults[%d]", i)] = fmt.Sprintf("no parameter file %s", f)
		}
	}
	firmware.Absolute(&p.Dir, &p.Bin)
	for i := range p.Defaults {
		firmware.Absolute(&p.Defaults[i])
	}
}
