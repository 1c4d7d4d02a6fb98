package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"skyloop/engine"
	"skyloop/firmware"
	"skyloop/geom"
	"skyloop/orchestrate"
	"skyloop/relay"
)

type firmwareFlags struct {
	simHost, vehicles, part, out string
}

func newFirmwareCmd() *cobra.Command {
	var f firmwareFlags
	c := &cobra.Command{
		Use:   "firmware SCENARIO --sim-host ADDR [--vehicles LIST | --part K/N]",
		Short: "Start a scenario's real firmware on this host, for a run on another host",
		Long: `firmware starts the real flight firmware (PX4 or ArduCopter SITL) of a scenario's
vehicles on this host, for a skyloop run of the same scenario on another host
(the simulator's, --sim-host): the swarm's firmware spread over the nodes of a
cluster, one skyloop run stepping them all. Each instance starts exactly as
skyloop run would have started it on its own host (the same instance number,
home, start time and parameters, ArduCopter's skyloop.parm included), except
that it connects to the simulator at --sim-host (ArduCopter: --model
JSON:<host>; PX4: PX4_SIM_HOST_ADDR). The run's relay then reaches each
instance's MAVLink link at the address its physics link came from.

The scenario must say that the firmware runs elsewhere (px4: or ardupilot:
block): launch: false, listen
(an address of the simulator's host, or 0.0.0.0) and peer (the firmware
hosts' addresses or networks), e.g.

  params: {preset: iris, controller: ardupilot-sitl,
           ardupilot: {launch: false, listen: 0.0.0.0, peer: 10.1.0.0/16}}

The firmware is found on this host as skyloop run finds it
($SKYLOOP_PX4_DIR or $SKYLOOP_ARDUPILOT_DIR, or the scenario's dir or bin).
Each instance writes its console to DIR/procs/<px4|ardupilot>-<i>.out|err and
its files under DIR/procs/<px4|ardupilot>-<i>/ (DIR: --out). firmware runs until every instance
has exited, or until it is stopped (Ctrl-C, SIGTERM), when it stops them
(SIGTERM, then SIGKILL after 3 s). It exits 0 when every instance exited
cleanly, 1 when one failed, 128+N when signal N stopped it. Start it before skyloop run (or within
the firmware's connect_timeout of it). See docs/firmware-hosts.md.`,
		Example: `  # on the simulator's host (10.1.0.1):
  skyloop run swarm.yaml --out runs/swarm
  # on a firmware host, for vehicles 0-7 (node ids, as skyloop run numbers them):
  skyloop firmware swarm.yaml --sim-host 10.1.0.1 --vehicles 0-7 --out fw-0
  # or on each of 4 firmware hosts, its quarter (deploy/slurm/firmware.sbatch):
  skyloop firmware swarm.yaml --sim-host 10.1.0.1 --part $SLURM_PROCID/4`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runFirmware(args[0], f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.simHost, "sim-host", "", "IPv4 address of the host running skyloop run (required)")
	fl.StringVar(&f.vehicles, "vehicles", "", "node ids of the vehicles whose firmware starts here, e.g. 0-7,9 (default: every vehicle with firmware)")
	fl.StringVar(&f.part, "part", "", "K/N: part K (from 0) of N equal, consecutive parts of the vehicles with firmware, for the K-th of N firmware hosts")
	fl.StringVar(&f.out, "out", "firmware", "directory for the instances' consoles and files")
	return c
}

// runFirmware starts the firmware of the selected vehicles and waits.
func runFirmware(arg string, f firmwareFlags) error {
	if f.simHost == "" {
		return usageError{errors.New("--sim-host is required: the IPv4 address of the host running skyloop run")}
	}
	sim, err := netip.ParseAddr(f.simHost)
	if err != nil || !sim.Is4() {
		return usageError{fmt.Errorf("--sim-host %q is not an IPv4 address", f.simHost)}
	}
	if f.vehicles != "" && f.part != "" {
		return usageError{errors.New("--vehicles and --part both choose the vehicles: give one")}
	}
	var part [2]int
	if f.part != "" {
		k, n, ok := strings.Cut(f.part, "/")
		ki, err1 := strconv.Atoi(k)
		ni, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || ni < 1 || ni > 100000 || ki < 0 || ki >= ni {
			return usageError{fmt.Errorf("--part %q: want K/N, part K of N with 0 <= K < N <= 100000 (e.g. 0/4 ... 3/4)", f.part)}
		}
		part = [2]int{ki, ni}
	}
	var want []int
	if f.vehicles != "" {
		if want, err = relay.ParseList(f.vehicles); err != nil {
			return usageError{fmt.Errorf("--vehicles: %w", err)}
		}
	}
	sc, err := loadScenario(arg)
	if err != nil {
		return err
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry, NoFiles: true})
	if err != nil {
		return asBadInput(err)
	}
	defer r.Close()
	var remotes []firmware.Remote
	for _, c := range r.Components() {
		if fw, ok := c.(firmware.Remote); ok && (want == nil || slices.Contains(want, fw.FirmwareBridge().Inst)) {
			remotes = append(remotes, fw)
		}
	}
	for _, id := range want {
		if !slices.ContainsFunc(remotes, func(fw firmware.Remote) bool { return fw.FirmwareBridge().Inst == id }) {
			return usageError{fmt.Errorf("--vehicles: node %d of %s is not a vehicle flown by firmware skyloop firmware can start (px4-sitl, ardupilot-sitl)", id, sc.Name)}
		}
	}
	if len(remotes) == 0 {
		return usageError{fmt.Errorf("%s has no vehicle flown by firmware skyloop firmware can start (controller: px4-sitl or ardupilot-sitl)", sc.Name)}
	}
	if f.part != "" {
		// Components come in node order: consecutive parts.
		all := len(remotes)
		remotes = remotes[part[0]*all/part[1] : (part[0]+1)*all/part[1]]
		if len(remotes) == 0 {
			slog.Info("no vehicle in this part: nothing to start", "part", f.part, "vehicles", all)
			return nil
		}
	}
	out, err := filepath.Abs(f.out)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	procs := filepath.Join(out, "procs")
	if err := os.MkdirAll(procs, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}

	// A stop signal stops the instances (the deferred stops) and exits
	// 128+N, as every command does.
	sigs.Graceful()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, stopSignals...)
	defer signal.Stop(stop)
	var kids []*firmwareChild
	defer func() {
		for _, k := range kids {
			if err := k.stop(); err != nil {
				slog.Warn("stopping firmware", "vehicle", k.name, "err", err)
			}
		}
	}()
	for _, fw := range remotes {
		k, err := startRemote(fw, sc.World.Origin, procs, sim)
		if err != nil {
			return err
		}
		kids = append(kids, k)
	}
	// Wait until every instance has exited, or a stop signal.
	var failed []string
	for _, k := range kids {
		select {
		case <-k.Done():
			if k.Err() != nil {
				failed = append(failed, fmt.Sprintf("%s: %s%s", k.name, k.Status(), k.Tail()))
			}
			slog.Info("firmware exited", "vehicle", k.name, "status", k.Status())
		case <-stop:
			return interrupted{fmt.Errorf("stopped by %s: the firmware instances were stopped", signalName())}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("firmware failed: %s", strings.Join(failed, "; "))
	}
	return nil
}

// firmwareChild is one started firmware instance and its console files.
type firmwareChild struct {
	*orchestrate.Child
	name  string
	files []*os.File
}

// stop stops the instance (if it still runs) and closes its files.
func (k *firmwareChild) stop() error {
	errs := []error{k.Stop(firmware.StopGrace)}
	for _, f := range k.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// startRemote makes the instance's files under procs and starts it.
func startRemote(fw firmware.Remote, origin geom.Geodetic, procs string, sim netip.Addr) (*firmwareChild, error) {
	b := fw.FirmwareBridge()
	base := filepath.Join(procs, fmt.Sprintf("%s-%d", b.Key, b.Inst))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name, err)
	}
	cmd, err := fw.RemoteCommand(origin, base, sim)
	if err != nil {
		return nil, usageError{err}
	}
	stdout, err := os.Create(base + ".out")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name, err)
	}
	stderr, err := os.Create(base + ".err")
	if err != nil {
		stdout.Close()
		return nil, fmt.Errorf("%s: %w", b.Name, err)
	}
	ch, err := orchestrate.StartChild(b.Firmware, cmd, stdout, stderr, nil)
	if err != nil {
		stdout.Close()
		stderr.Close()
		return nil, fmt.Errorf("%s: starting %s: %w", b.Name, b.Firmware, err)
	}
	slog.Info(b.Firmware+" started", "vehicle", b.Name, "instance", b.Inst, "pid", ch.PID(), "sim", sim.String(), "dir", base)
	return &firmwareChild{Child: ch, name: b.Name, files: []*os.File{stdout, stderr}}, nil
}
