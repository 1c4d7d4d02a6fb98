package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"skyloop/extern"
	"skyloop/relay"
)

type relayFlags struct {
	upstream, fingerprint, token, vehicles, listen, name, command string
	timeout, stepTimeout                                          time.Duration
}

func newRelayCmd() *cobra.Command {
	var f relayFlags
	c := &cobra.Command{
		Use:   "relay --upstream ADDR --vehicles LIST",
		Short: "Relay the lockstep ticks of a host's external agents to a run on another host",
		Long: `relay runs on a host with external agents (mission logic in any language,
docs/protocol.md) taking part in a run on another host; relays chain into a
tree of synchronisation nodes (docs/remote.md). The agents connect to the
relay as if it were skyloop (SKYLOOP_ADDR, SKYLOOP_TOKEN); once every node
of --vehicles has its agent, the relay joins the run upstream with one connection for all of
them. Each round, skyloop sends the relay one batch with the ticks of all its
agents; the relay fans them out, gathers the answers and sends one batch
back when every agent is done: one round trip per host and round instead of
one per agent. Results are identical to agents connected directly.

Upstream is the address skyloop run --listen printed (TLS, pinned to the
certificate --fingerprint it printed; the token too) or another relay's
--listen address (relays chain into a tree). Local agents connect to
--listen: plain TCP on a loopback address (the default, 127.0.0.1:7878), TLS
with a certificate made for the relay on any other (its fingerprint is
printed), for relays below this one.

--command starts the local agents: a template run by /bin/sh once per node
when it contains {id}, once for all otherwise, with SKYLOOP_ADDR,
SKYLOOP_TOKEN, SKYLOOP_VEHICLE, SKYLOOP_VEHICLES (and SKYLOOP_FINGERPRINT
when --listen is not loopback) set; they are stopped when the run ends.
Without it, start them yourself with those variables.

--connect-timeout (default 2m) bounds the wait for the local agents and
then for the run's welcome; the run waits for the relay up to its extern
agents' connect_timeout, so give that at least as much (examples/remote
gives 120s). Connections that have not shown the token yet are bounded (in
number, per host, to a 4 KiB hello and 10 s): a stranger is refused and
counted, and the relay goes on waiting.

The relay serves one run, then exits: 0 when the run ended, 1 when it failed
(the message names the peer at fault: the upstream, or which local agent).
An agent that fails behind the relay fails only its own nodes upstream, as
on a direct connection. See docs/remote.md.`,
		Example: `  # host A (the run):
  skyloop run swarm.yaml --listen 0.0.0.0:7000
  # prints: ... connect to [::]:7000 (TLS) with --fingerprint sha256:... --token ...
  # host B (nodes 0-49 of the run's extern agents):
  skyloop relay --upstream hostA:7000 --fingerprint sha256:... --token ... \
      --vehicles 0-49 --command 'python3 mission.py'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runRelay(cmd, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.upstream, "upstream", "", "skyloop's --listen address (host:port), or a relay's")
	fl.StringVar(&f.fingerprint, "fingerprint", "", "the upstream's TLS certificate fingerprint, as printed (default $SKYLOOP_FINGERPRINT; needed unless the upstream is on loopback)")
	fl.StringVar(&f.token, "token", "", "the run's token, as printed (default $SKYLOOP_TOKEN)")
	fl.StringVar(&f.vehicles, "vehicles", "", "node ids whose agents connect here, e.g. 0-24,30")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:7878", "where the local agents connect (loopback: plain TCP; other addresses: TLS)")
	fl.StringVar(&f.name, "name", "", "the relay's name in skyloop's messages (default relay@HOSTNAME)")
	fl.StringVar(&f.command, "command", "", "start the local agents: a shell command template ({id} = one process per node)")
	fl.DurationVar(&f.timeout, "connect-timeout", relay.DefaultConnectTimeout, "how long to wait for the local agents, and for the upstream's welcome (give the run's extern connect_timeout at least this plus the time to start the relay)")
	fl.DurationVar(&f.stepTimeout, "timeout", 10*time.Second, "wall-clock time a local agent has to answer a tick before it fails (as the extern behaviour's timeout)")
	return c
}

func runRelay(cmd *cobra.Command, f relayFlags) error {
	if f.upstream == "" {
		return badInput("relay: --upstream is required (the address skyloop run --listen printed)")
	}
	if _, _, err := net.SplitHostPort(f.upstream); err != nil {
		return badInput("relay: --upstream %q: %v", f.upstream, err)
	}
	if f.token == "" {
		f.token = os.Getenv("SKYLOOP_TOKEN")
	}
	if f.token == "" {
		return badInput("relay: --token is required (skyloop run --listen prints it)")
	}
	if f.fingerprint == "" {
		f.fingerprint = os.Getenv("SKYLOOP_FINGERPRINT")
	}
	if f.fingerprint != "" {
		fp, err := extern.ParseFingerprint(f.fingerprint)
		if err != nil {
			return badInput("relay: --fingerprint: %v", err)
		}
		f.fingerprint = fp
	}
	if f.vehicles == "" {
		return badInput("relay: --vehicles is required (the node ids of the agents on this host, e.g. 0-24)")
	}
	ids, err := relay.ParseList(f.vehicles)
	if err != nil {
		return badInput("relay: --vehicles: %v", err)
	}
	if f.timeout <= 0 {
		return badInput("relay: --connect-timeout must be positive, got %v", f.timeout)
	}
	if f.stepTimeout <= 0 {
		return badInput("relay: --timeout must be positive, got %v", f.stepTimeout)
	}
	if strings.Count(f.command, "{")-strings.Count(f.command, "{id}") != 0 {
		return badInput("relay: --command %q: the template knows only {id}", f.command)
	}
	if f.name == "" {
		h, _ := os.Hostname()
		f.name = "relay@" + h
	}
	stderr := cmd.ErrOrStderr()
	sigs.Graceful()
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	go func() {
		for !sigs.Stopped() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		cancel()
	}()
	var procs []*exec.Cmd
	defer func() { stopProcs(procs) }()
	var launchErr error
	st, err := relay.Run(ctx, relay.Config{Upstream: f.upstream, Fingerprint: f.fingerprint, Token: f.token, Vehicles: ids,
		Listen: f.listen, Name: f.name, ConnectTimeout: f.timeout, StepTimeout: f.stepTimeout, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})), // progress: agents connecting, joining
		Ready: func(addr, fp string) {
			msg := fmt.Sprintf("relay: local agents of nodes %s connect to %s", relay.FormatList(ids), addr)
			if fp != "" {
				msg += " (TLS) with --fingerprint " + fp
			}
			fmt.Fprintln(stderr, msg+" and the run's token")
			if f.command != "" {
				procs, launchErr = launchAgents(f.command, ids, addr, fp, f.token)
				if launchErr != nil {
					cancel()
				}
			}
		}})
	if launchErr != nil {
		return fmt.Errorf("relay: %w", launchErr)
	}
	if sigs.Stopped() {
		return interrupted{fmt.Errorf("relay stopped by %s", signalName())}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "relay: the run ended; %d rounds, %d ticks fanned out, %d frames sent upstream\n", st.Rounds, st.Down, st.Up)
	if st.Refused.Total > 0 {
		fmt.Fprintf(stderr, "relay: connections refused before authentication: %s\n", st.Refused)
	}
	return nil
}

// launchAgents starts the --command processes.
func launchAgents(tmpl string, ids []int, addr, fp, token string) ([]*exec.Cmd, error) {
	groups := [][]int{ids}
	if strings.Contains(tmpl, "{id}") {
		groups = groups[:0]
		for _, id := range ids {
			groups = append(groups, []int{id})
		}
	}
	var procs []*exec.Cmd
	for _, g := range groups {
		list := make([]string, len(g))
		for i, id := range g {
			list[i] = strconv.Itoa(id)
		}
		line := strings.ReplaceAll(tmpl, "{id}", list[0])
		c := exec.Command("/bin/sh", "-c", line)
		c.Env = append(os.Environ(), "SKYLOOP_ADDR="+addr, "SKYLOOP_TOKEN="+token, "SKYLOOP_FINGERPRINT="+fp,
			"SKYLOOP_VEHICLE="+list[0], "SKYLOOP_VEHICLES="+strings.Join(list, ","), "SKYLOOP_SOCKET=")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			stopProcs(procs)
			return nil, fmt.Errorf("starting %q: %w", line, err)
		}
		procs = append(procs, c)
	}
	return procs, nil
}

// stopProcs gives the agents two seconds to exit after the run's end,
// then stops their process groups.
func stopProcs(procs []*exec.Cmd) {
	done := make(chan struct{})
	go func() {
		for _, p := range procs {
			p.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(2 * time.Second):
	}
	for _, p := range procs {
		syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		for _, p := range procs {
			syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		}
		<-done
	}
}
