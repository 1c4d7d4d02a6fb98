package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"skyloop/engine"
	"skyloop/foxglove"
)

// TestFoxgloveLiveClient serves a run over the Foxglove WebSocket protocol
// and connects @foxglove/ws-protocol's FoxgloveClient from npm
// (foxglove/testdata/node/live.mjs), a client we did not write: it gets
// the server's info, the advertised channels with Foxglove's schema names,
// and, after subscribing, the scene and every vehicle's transform. The run
// writes the same files with and without the server.
func TestFoxgloveLiveClient(t *testing.T) {
	dir := filepath.Join("..", "foxglove", "testdata", "node")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@foxglove", "ws-protocol"))
	}
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_NODE") != "" {
			t.Fatalf("@foxglove/ws-protocol is required (SKYLOOP_REQUIRE_NODE) but missing: %v; run npm ci in %s", err, dir)
		}
		t.Skipf("skipping: Node.js or @foxglove/ws-protocol missing (%v); install Node.js and run `npm ci` in %s (CI does)", err, dir)
	}
	if _, err := foxglove.NewServer("0.0.0.0:0", nil, nil); err == nil {
		t.Fatal("a server on 0.0.0.0 was accepted: only loopback may be served")
	}
	srv, err := foxglove.NewServer("127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cmd := exec.Command(node, "live.mjs", srv.URL(), "8", "20000")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, _ := srv.Clients(); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client did not connect: %s", stderr.String())
		}
	}
	base := t.TempDir()
	res, err := Execute(buildYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1}), filepath.Join(base, "live"), Options{Live: srv})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("live.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Why      string            `json:"why"`
		Server   string            `json:"server"`
		Channels map[string]string `json:"channels"`
		Counts   map[string]int    `json:"counts"`
		Frames   []string          `json:"frames"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("live.mjs printed %q: %v (%s)", stdout.String(), err, stderr.String())
	}
	if got.Why != "enough" || got.Server != "skyloop" {
		t.Fatalf("client: %+v (%s)", got, stderr.String())
	}
	for topic, schema := range map[string]string{foxglove.TopicTF: "foxglove.FrameTransform", foxglove.TopicScene: "foxglove.SceneUpdate",
		foxglove.TopicEvents: "foxglove.Log", foxglove.TopicNetwork: "skyloop.NetworkEvent",
		foxglove.FixTopic("uav-3"): "foxglove.LocationFix", foxglove.TelemetryTopic("uav-3"): "skyloop.Telemetry"} {
		if got.Channels[topic] != schema {
			t.Errorf("channel %s: schema %q, want %q", topic, got.Channels[topic], schema)
		}
	}
	if len(got.Frames) != 4 || got.Counts[foxglove.TopicScene] < 1 {
		t.Errorf("transforms of %v, %d scene updates: want all four vehicles and the scene", got.Frames, got.Counts[foxglove.TopicScene])
	}
	// The server changes nothing in the run's files.
	plain := filepath.Join(base, "plain")
	runYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1}, plain)
	a, b := readDir(t, res.Dir), readDir(t, plain)
	delete(a, "meta.json")
	delete(b, "meta.json")
	for name, data := range b {
		if !bytes.Equal(a[name], data) {
			t.Errorf("%s differs with the live server", name)
		}
	}
}
