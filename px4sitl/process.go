package px4sitl

import (
	"net/netip"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// command returns `px4 -i inst -d -w wd rootfs` with the airframe, the
// parameters and the logger setting in its environment (firmware.Bridge
// starts it as an orchestrate.Child: its own process group, killed with
// skyloop). PX4 connects to the simulator at simHost, or (the zero Addr)
// where px4.listen says.
func command(p *Params, inst int, wd string, simHost netip.Addr) (*exec.Cmd, error) {
	model, err := p.Model()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.Bin, "-i", strconv.Itoa(inst), "-d", "-w", wd, p.Rootfs)
	cmd.Dir = wd
	env := []string{"PX4_SIM_MODEL=" + model, "PX4_SYS_AUTOSTART=" + strconv.Itoa(p.Airframe)}
	if simHost.IsValid() {
		env = append(env, "PX4_SIM_HOST_ADDR="+simHost.String())
	} else if a, err := netip.ParseAddr(p.Listen); err == nil && !a.IsLoopback() && !a.IsUnspecified() {
		// The simulator port listens on one address only: PX4 must
		// connect there, not to localhost (PX4_SIM_HOST_ADDR, read by
		// PX4's simulator_mavlink).
		env = append(env, "PX4_SIM_HOST_ADDR="+a.String())
	}
	if !p.Logger {
		env = append(env, "PX4_PARAM_SDLOG_BACKEND=0")
	}
	names := make([]string, 0, len(p.Params))
	for n := range p.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		env = append(env, "PX4_PARAM_"+n+"="+strconv.FormatFloat(p.Params[n], 'g', -1, 64))
	}
	// PX4's own variables from skyloop's environment would change what
	// the scenario says (another model, a remote simulator host): drop them.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PX4_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	return cmd, nil
}
