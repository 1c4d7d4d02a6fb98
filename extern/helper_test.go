package extern_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"skyloop/extern/client"
)

// TestMain doubles as the external agents: with SKYLOOP_HELPER set, the
// test binary is a client process in the given mode instead of a test run.
func TestMain(m *testing.M) {
	if mode := os.Getenv("SKYLOOP_HELPER"); mode != "" {
		if err := helper(mode); err != nil && !client.IsEnd(err) {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperCommand returns a command template that runs this test binary as
// a client in mode, one process per agent.
func helperCommand(t testing.TB, mode string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("SKYLOOP_HELPER=%s SKYLOOP_VEHICLE={id} exec %s", mode, exe)
}

func helper(mode string) error {
	switch mode {
	case "bench":
		// One process, one connection per agent; every agent steps at every
		// tick and does nothing else.
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for _, s := range strings.Split(os.Getenv("SKYLOOP_VEHICLES"), ",") {
			id, _ := strconv.Atoi(s)
			wg.Add(1)
			go func() {
				defer wg.Done()
				a, err := client.Connect(client.Options{Vehicle: id})
				if err != nil {
					errs <- err
					return
				}
				defer a.Close()
				for {
					if err := a.Step(); err != nil {
						if !client.IsEnd(err) {
							errs <- err
						}
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	a, err := client.Connect(client.Options{Vehicle: -1})
	if err != nil {
		return err
	}
	defer a.Close()
	switch mode {
	case "mission":
		m := &mission{id: a.ID()}
		for {
			m.step(a.Time(), a.Telemetry(), a.Inbox(), a)
			if err := a.Sleep(100 * time.Millisecond); err != nil {
				return err
			}
		}
	case "crash", "hang", "malformed", "oversized", "badcmd":
		for a.Time() < time.Second {
			if err := a.Sleep(100 * time.Millisecond); err != nil {
				return err
			}
		}
		switch mode {
		case "crash":
			fmt.Fprintln(os.Stderr, "helper: crashing on purpose at", a.Time())
			os.Exit(3)
		case "hang":
			time.Sleep(time.Hour)
		case "malformed":
			raw(a, []byte(`{"type": "send", "vehicle": `))
		case "oversized":
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], 2<<20)
			rawBytes(a, hdr[:])
		case "badcmd":
			a.Takeoff(-1)
		}
		return a.Step()
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// raw writes a length-prefixed frame with the given (broken) body.
func raw(a *client.Agent, body []byte) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	rawBytes(a, append(hdr[:], body...))
}

func rawBytes(a *client.Agent, b []byte) { a.RawWrite(b) }
