package ardupilot_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/ardupilot"
	"skyloop/engine"
	"skyloop/mavlink"
	"skyloop/orchestrate"
	"skyloop/runner"
	"skyloop/scenario"
)

// BenchmarkArduCopterAlone measures ArduCopter SITL's own cost: n
// instances with their built-in physics (--model quad) at their maximum
// speedup, until each has run 60 simulated seconds (its SYSTEM_TIME's
// time_boot_ms, read over its MAVLink port). BenchmarkArduCopterOnSkyloop
// runs the same on skyloop's physics. Run with SKYLOOP_ARDUPILOT_DIR set
// and -benchtime 1x.
func BenchmarkArduCopterAlone(b *testing.B) {
	dir := os.Getenv(ardupilot.EnvDir)
	if dir == "" {
		b.Skipf("%s is not set: this benchmark runs ArduCopter SITL", ardupilot.EnvDir)
	}
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("vehicles=%d", n), func(b *testing.B) {
			for range b.N {
				wall := alone(b, dir, n, 60000)
				b.ReportMetric(60/wall.Seconds(), "x_realtime")
				b.ReportMetric(wall.Seconds(), "wall_s")
			}
		})
	}
}

// alone runs n ArduCopters with their own physics until each reports
// bootMs of time since boot, and returns the wall time.
func alone(b *testing.B, dir string, n int, bootMs uint32) time.Duration {
	start := time.Now()
	done := make(chan error, n)
	for i := 0; i < n; i++ {
		wd := b.TempDir()
		cmd := exec.Command(filepath.Join(dir, "build/sitl/bin/arducopter"), "--model", "quad", "--speedup", "1000",
			"--defaults", filepath.Join(dir, "Tools/autotest/default_params/copter.parm"), "-I", strconv.Itoa(i), "--serial0", "tcp:0")
		cmd.Dir = wd
		c, err := orchestrate.StartChild("ArduCopter", cmd, discard{}, discard{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Stop(3 * time.Second)
		go func(port int) { done <- waitBoot(port, bootMs) }(5760 + 10*i)
	}
	for i := 0; i < n; i++ {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// waitBoot connects to an ArduCopter's MAVLink port, asks for SYSTEM_TIME
// and returns once time_boot_ms reaches ms.
func waitBoot(port int, ms uint32) error {
	var conn net.Conn
	var err error
	for range 300 {
		if conn, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	enc, dec := mavlink.NewEncoder(255, 190), mavlink.NewDecoder()
	req, _ := enc.Encode(&common.MessageRequestDataStream{TargetSystem: 1, TargetComponent: 1,
		ReqStreamId: uint8(common.MAV_DATA_STREAM_ALL), ReqMessageRate: 10, StartStop: 1})
	conn.Write(req)
	buf, part := make([]byte, 65536), []byte(nil)
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		conn.SetReadDeadline(time.Now().Add(time.Second))
		k, err := conn.Read(buf)
		if err != nil {
			conn.Write(req)
			continue
		}
		part = append(part, buf[:k]...)
		reached := false
		for len(part) > 0 {
			if part[0] != 0xFD && part[0] != 0xFE {
				part = part[1:]
				continue
			}
			l := mavlink.FrameLen(part)
			if l == 0 || l > len(part) {
				break
			}
			dec.Decode(part[:l], func(f frame.Frame) {
				if st, ok := f.GetMessage().(*common.MessageSystemTime); ok && st.TimeBootMs >= ms {
					reached = true
				}
			})
			part = part[l:]
		}
		if reached {
			return nil
		}
	}
	return fmt.Errorf("ArduCopter on %d never reached %d ms", port, ms)
}

// BenchmarkArduCopterOnSkyloop runs n ArduCopters on skyloop's physics for
// 60 simulated seconds (no behaviours, ideal network).
func BenchmarkArduCopterOnSkyloop(b *testing.B) {
	if os.Getenv(ardupilot.EnvDir) == "" {
		b.Skipf("%s is not set: this benchmark runs ArduCopter SITL", ardupilot.EnvDir)
	}
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("vehicles=%d", n), func(b *testing.B) {
			text := fmt.Sprintf(`
name: ap-bench
seed: 1
duration: 60s
tick: 1ms
vehicles:
  - name: copter
    kind: multirotor
    count: %d
    spawn: {layout: grid, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: ardupilot-sitl}
network:
  backend: ideal
`, n)
			sc, err := scenario.Parse("ap-bench.yaml", []byte(text), registry.Schema())
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				r, err := engine.Build(sc, engine.Options{Registry: registry})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := runner.Execute(r, "", runner.Options{}); err != nil {
					b.Fatal(err)
				}
				wall := time.Since(start)
				b.ReportMetric(60/wall.Seconds(), "x_realtime")
				b.ReportMetric(wall.Seconds(), "wall_s")
			}
		})
	}
}
