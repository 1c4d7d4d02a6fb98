package px4sitl

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"skyloop/fields"
	"skyloop/firmware"
	"skyloop/sim"
)

// EnvDir is the environment variable that locates PX4's SITL build
// directory when a scenario does not (px4.dir).
const EnvDir = "SKYLOOP_PX4_DIR"

// BasePort is the simulator port of PX4 instance 0; instance i connects to
// BasePort+i.
const BasePort = 4560

// howToBuild ends every message about missing firmware.
const howToBuild = "build PX4 SITL with scripts/build-px4-sitl.sh SRC_DIR (see docs/px4.md) " +
	"and set " + EnvDir + " (or px4.dir) to its build/px4_sitl_default directory"

// Params are the `px4:` block of a multirotor group flown by
// `controller: px4-sitl`.
type Params struct {
	// Dir is PX4's SITL build directory (PX4-Autopilot/build/px4_sitl_default),
	// holding bin/px4 and etc/; empty: the SKYLOOP_PX4_DIR environment
	// variable.
	Dir string `yaml:"dir" json:"dir"`
	// Bin is the PX4 executable; empty: Dir/bin/px4.
	Bin string `yaml:"bin" json:"bin"`
	// Rootfs is PX4's data directory, with init.d-posix/rcS and the
	// airframes; empty: Dir/etc.
	Rootfs string `yaml:"rootfs" json:"rootfs"`
	// Airframe is the SYS_AUTOSTART id; 10016 is none_iris, the Iris
	// quadrotor with PX4's simulator interface.
	Airframe int `yaml:"airframe" json:"airframe"`
	// Launch starts PX4 for every vehicle (default). Without it skyloop
	// only listens, and PX4 instances started by hand (`PX4_SIM_MODEL=none_iris
	// bin/px4 -i N`) connect.
	Launch bool `yaml:"launch" json:"launch"`
	// Port is the simulator port of instance 0; vehicle i listens on Port+i
	// (PX4 connects to 4560+i unless told otherwise).
	Port int `yaml:"port" json:"port"`
	// Listen is the address the simulator ports listen on (127.0.0.1).
	// Another address (0.0.0.0, a host's) lets PX4 instances on other
	// hosts connect (started by hand with launch: false and
	// PX4_SIM_HOSTNAME set to this host); Peer must then name them.
	Listen string `yaml:"listen" json:"listen"`
	// Peer lists the addresses or networks (comma-separated, e.g.
	// 10.0.0.5 or 10.0.0.0/24) accepted besides loopback: PX4's simulator
	// protocol has no authentication.
	Peer string `yaml:"peer" json:"peer"`
	// Params are PX4 parameters set at boot (PX4_PARAM_<NAME> in PX4's
	// environment, which its rcS applies).
	Params map[string]float64 `yaml:"params" json:"params"`
	// Logger keeps PX4's ulog logger running (about 8 MB per 30 simulated
	// seconds per vehicle, in the vehicle's working directory).
	Logger bool `yaml:"logger" json:"logger"`
	// ConnectTimeout is how long (wall clock) PX4 may take to boot and
	// connect.
	ConnectTimeout sim.Duration `yaml:"connect_timeout" json:"connect_timeout"`
	// StepTimeout is how long (wall clock) PX4 may take to answer one
	// HIL_SENSOR once it runs in lockstep.
	StepTimeout sim.Duration `yaml:"step_timeout" json:"step_timeout"`
	// Period is the HIL_SENSOR period: PX4's IMU rate (250 Hz).
	Period sim.Duration `yaml:"period" json:"period"`
	// IdleRotorSpeed is the rotor speed (rad/s) at PX4's zero output while
	// armed; a PX4 output u drives the rotor to idle + (max - idle)*u
	// (Gazebo's Iris: 100 rad/s of 1100).
	IdleRotorSpeed float64 `yaml:"idle_rotor_speed" json:"idle_rotor_speed"`
	// Transcript records every frame exchanged with PX4 in
	// procs/px4-<i>.transcript.gz, for replaying PX4's side in tests.
	Transcript bool `yaml:"transcript" json:"transcript"`
}

// DefaultParams returns the defaults: PX4 found through SKYLOOP_PX4_DIR,
// airframe 10016 launched per vehicle, 250 Hz lockstep.
func DefaultParams() Params {
	return Params{Airframe: 10016, Launch: true, Port: BasePort, Listen: "127.0.0.1",
		ConnectTimeout: 60 * sim.Second, StepTimeout: 10 * sim.Second,
		Period: 4 * sim.Millisecond, IdleRotorSpeed: 100}
}

// build says where PX4's SITL build is looked for.
var build = firmware.Build{Env: EnvDir, Key: "px4.dir", What: "PX4 SITL", HowToBuild: howToBuild}

// LockstepPeriod implements firmware.Params: the HIL_SENSOR period.
func (p *Params) LockstepPeriod() sim.Duration { return p.Period }

// Validate checks the parameters and, when PX4 is launched, that the
// firmware is where they say; it fills Dir from SKYLOOP_PX4_DIR and Bin and
// Rootfs from Dir when they are empty.
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	firmware.CheckPort(bad, "TCP", p.Port)
	firmware.CheckAccess(bad, p.Listen, p.Peer)
	firmware.CheckTimeouts(bad, p.ConnectTimeout, p.StepTimeout)
	if p.Period < sim.Millisecond || p.Period > 20*sim.Millisecond {
		bad["period"] = fmt.Sprintf("must be in [1ms, 20ms] (PX4 runs its estimator on the IMU rate), got %v", p.Period)
	}
	if !(p.IdleRotorSpeed >= 0) || math.IsInf(p.IdleRotorSpeed, 0) {
		bad["idle_rotor_speed"] = fmt.Sprintf("must be >= 0 rad/s, got %v", p.IdleRotorSpeed)
	}
	if p.Airframe < 1 || p.Airframe > 99999999 {
		bad["airframe"] = fmt.Sprintf("must be a SYS_AUTOSTART id such as 10016, got %d", p.Airframe)
	}
	firmware.CheckParams(bad, "a PX4 parameter name", p.Params)
	if p.Launch {
		p.locate(bad)
	}
	return bad
}

// locate fills Dir, Bin and Rootfs and checks the firmware is there.
func (p *Params) locate(bad fields.Errors) {
	if !build.FindDir(bad, &p.Dir, p.Bin == "" || p.Rootfs == "") {
		return
	}
	key := "dir"
	if p.Bin == "" {
		p.Bin = filepath.Join(p.Dir, "bin", "px4")
	} else {
		key = "bin"
	}
	if !firmware.Executable(p.Bin) {
		bad[key] = fmt.Sprintf("no PX4 executable at %s: %s", p.Bin, howToBuild)
		return
	}
	key = "dir"
	if p.Rootfs == "" {
		p.Rootfs = filepath.Join(p.Dir, "etc")
	} else {
		key = "rootfs"
	}
	if _, err := os.Stat(filepath.Join(p.Rootfs, "init.d-posix", "rcS")); err != nil {
		bad[key] = fmt.Sprintf("%s has no init.d-posix/rcS, so it is not PX4's SITL data directory: %s", p.Rootfs, howToBuild)
		return
	}
	if _, err := p.Model(); err != nil {
		bad["airframe"] = err.Error()
	}
	firmware.Absolute(&p.Dir, &p.Bin, &p.Rootfs)
}

// Model returns the simulator model name of the airframe (PX4_SIM_MODEL):
// the part after the id in its file name under init.d-posix/airframes,
// e.g. none_iris for 10016_none_iris.
func (p *Params) Model() (string, error) {
	dir := filepath.Join(p.Rootfs, "init.d-posix", "airframes")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("reading PX4's airframes: %w", err)
	}
	prefix := strconv.Itoa(p.Airframe) + "_"
	var ids []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			return strings.TrimPrefix(e.Name(), prefix), nil
		}
		if i := strings.IndexByte(e.Name(), '_'); i > 0 && strings.Contains(e.Name(), "none_") {
			ids = append(ids, e.Name())
		}
	}
	return "", fmt.Errorf("PX4 has no airframe %d in %s (simulator airframes there: %s)", p.Airframe, dir, strings.Join(ids, ", "))
}
