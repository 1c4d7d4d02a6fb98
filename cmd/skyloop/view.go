package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"skyloop/view"
)

func newViewCmd() *cobra.Command {
	var addr string
	c := &cobra.Command{
		Use:   "view RUN_DIR",
		Short: "Replay a finished run in the browser, with a time scrubber",
		Long: `Serves the live view's page for a finished run directory at http://ADDR/
(--serve, default 127.0.0.1:8080; loopback only) until Ctrl-C. The page plays
the run from its files, CSV or Parquet (outputs.format): vehicles.csv or
vehicles.parquet (required: every vehicle at its last sample at or before the
time shown, with its trail), trace.csv or .parquet (the links heard in the
last second coloured by their delivery ratio over the last two, and the network
figures of the last five seconds; at most the first 2,000,000 events) and
events.csv; play, pause, the playback rate and a scrubber move through time.

The run directory may come from someone else: its files are read as untrusted
(regular files only, size and row caps, every id, time and number checked; an
error names the file and line), and the page shows their text as text. The
server answers only requests that name its address (localhost, 127.0.0.1,
[::1]), with a Content-Security-Policy that allows no inline script.`,
		Example: `  skyloop run munils-50-wifi && skyloop view runs/munils-50-wifi/seed1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if st, err := os.Stat(args[0]); err != nil || !st.IsDir() {
				return badInput("%s is not a finished run directory", args[0])
			}
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return badInput("--serve %q: %v", addr, err)
			}
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return badInput("--serve %q: only loopback addresses are served", addr)
			}
			rep, err := view.LoadReplay(args[0])
			if err != nil {
				return badInput("%v", err)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return badInput("--serve: %v", err)
			}
			pages, err := view.ReplayPages(rep, ln.Addr().String())
			if err != nil {
				ln.Close()
				return err
			}
			srv := &http.Server{Handler: pages, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}
			fmt.Fprintf(cmd.OutOrStdout(), "replaying %s (%d vehicles, %.1f s) at http://%s/ - Ctrl-C to stop\n", args[0], len(rep.Names), rep.DurationS, ln.Addr())
			sigs.Graceful()
			go func() {
				for !sigs.Stopped() {
					time.Sleep(100 * time.Millisecond)
				}
				srv.Close()
			}()
			if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "serve", defaultServeAddr, "loopback address to serve the page on")
	return c
}
