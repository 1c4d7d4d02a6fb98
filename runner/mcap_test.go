package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/foxglove"
	"skyloop/internal/nodetest"
)

// mcapYAML flies four multirotors past a tower, beaconing over Wi-Fi,
// with run.mcap on.
const mcapYAML = `
name: mcap-check
seed: 2
duration: 4s
tick: 1ms
outputs: {mcap: true}
world:
  obstacles:
    - {name: tower, min: [30, -5, 0], max: [36, 5, 40]}
vehicles:
  - name: uav
    kind: multirotor
    count: 4
    spawn: {layout: grid, origin: [0, 0, 10], spacing: 6}
    params: {preset: iris}
    behaviors:
      - {type: waypoints, relative: true, loop: true, points: [[20, 0, 0], [20, 20, 5]]}
      - {type: beacon, period: 100ms, stagger: 1ms, format: planar}
network:
  backend: wifi
`

// mcapSummary is what foxglove/testdata/node/read.mjs prints.
type mcapSummary struct {
	Header struct {
		Library string `json:"library"`
	} `json:"header"`
	Footer   bool                       `json:"footer"`
	Metadata map[string]map[string]any  `json:"metadata"`
	Counts   map[string]int             `json:"counts"`
	First    map[string]json.RawMessage `json:"first"`
	Channels map[string]struct {
		Schema   string `json:"schema"`
		Encoding string `json:"encoding"`
	} `json:"channels"`
	Unordered []string `json:"unordered"`
	// Indexed is what McapIndexedReader (footer, summary, chunk indexes)
	// finds; IndexedError its error.
	Indexed struct {
		Counts        map[string]int `json:"counts"`
		Statistics    int            `json:"statistics"`
		ChannelCounts map[string]int `json:"channelCounts"`
		Profile       *string        `json:"profile"`
	} `json:"indexed"`
	IndexedError string `json:"indexedError"`
}

// TestMCAPReadByMcapCore runs a scenario with run.mcap and reads the file
// back with @mcap/core from npm (foxglove/testdata/node/read.mjs), a
// reader we did not write: every topic is there with Foxglove's schema
// names, and the message counts are the run's samples (vehicles.csv),
// network events (trace.csv) and events (events.csv). The same run gives
// the same file.
func TestMCAPReadByMcapCore(t *testing.T) {
	node, dir := nodetest.Readers(t, "@mcap/core")
	base := t.TempDir()
	run := filepath.Join(base, "a")
	runYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1}, run)
	var s mcapSummary
	if err := nodetest.JSON(node, dir, "read.mjs", &s, filepath.Join(run, "run.mcap")); err != nil {
		t.Fatal(err)
	}
	if !s.Footer || !strings.Contains(s.Header.Library, "skyloop") {
		t.Errorf("header library %q, footer %v", s.Header.Library, s.Footer)
	}
	if s.Metadata["skyloop"]["scenario"] != "mcap-check" {
		t.Errorf("metadata %v", s.Metadata)
	}
	lines := func(name string) int {
		b, err := os.ReadFile(filepath.Join(run, name))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("\n")) - 1 // header
	}
	samples := lines("vehicles.csv") / 4
	want := map[string]struct {
		schema string
		count  int
	}{
		foxglove.TopicTF:      {"foxglove.FrameTransform", 4 * samples},
		foxglove.TopicScene:   {"foxglove.SceneUpdate", 1},
		foxglove.TopicNetwork: {"skyloop.NetworkEvent", lines("trace.csv")},
		foxglove.TopicEvents:  {"foxglove.Log", lines("events.csv")},
	}
	for i := 0; i < 4; i++ {
		name := "uav-" + string(rune('0'+i))
		want[foxglove.TelemetryTopic(name)] = struct {
			schema string
			count  int
		}{"skyloop.Telemetry", samples}
		want[foxglove.FixTopic(name)] = struct {
			schema string
			count  int
		}{"foxglove.LocationFix", samples}
	}
	if samples < 30 || want[foxglove.TopicNetwork].count < 100 || want[foxglove.TopicEvents].count < 1 {
		t.Fatalf("the run should have samples, network events and events: %d, %d, %d", samples, want[foxglove.TopicNetwork].count, want[foxglove.TopicEvents].count)
	}
	for topic, w := range want {
		ch, ok := s.Channels[topic]
		if !ok {
			t.Errorf("topic %s missing (channels %v)", topic, s.Channels)
			continue
		}
		if ch.Schema != w.schema || ch.Encoding != "json" {
			t.Errorf("topic %s: schema %s, encoding %s; want %s, json", topic, ch.Schema, ch.Encoding, w.schema)
		}
		if s.Counts[topic] != w.count {
			t.Errorf("topic %s: %d messages, want %d", topic, s.Counts[topic], w.count)
		}
	}
	// The summary section, as Foxglove's indexed reader finds it: the
	// header's profile, and the statistics record's count for every
	// channel (each channel has messages), equal to the messages read.
	if s.IndexedError != "" {
		t.Fatalf("McapIndexedReader: %s", s.IndexedError)
	}
	if s.Indexed.Profile == nil || *s.Indexed.Profile != foxglove.MCAPProfile {
		t.Errorf("header profile %v, want %q", s.Indexed.Profile, foxglove.MCAPProfile)
	}
	total := 0
	for topic, w := range want {
		if s.Indexed.ChannelCounts[topic] != w.count {
			t.Errorf("topic %s: statistics count %d, want %d", topic, s.Indexed.ChannelCounts[topic], w.count)
		}
		total += w.count
	}
	if len(s.Indexed.ChannelCounts) != len(want) || s.Indexed.Statistics != total {
		t.Errorf("statistics: %d messages on %d channels %v, want %d on %d", s.Indexed.Statistics, len(s.Indexed.ChannelCounts), s.Indexed.ChannelCounts, total, len(want))
	}
	if len(s.Channels) != len(want) {
		t.Errorf("%d channels, want %d", len(s.Channels), len(want))
	}
	// The messages carry the fields Foxglove's panels read.
	var tf struct {
		Parent      string             `json:"parent_frame_id"`
		Child       string             `json:"child_frame_id"`
		Translation map[string]float64 `json:"translation"`
		Rotation    map[string]float64 `json:"rotation"`
	}
	var fix struct {
		Lat float64 `json:"latitude"`
		Lon float64 `json:"longitude"`
	}
	var scene struct {
		Entities []struct {
			ID    string            `json:"id"`
			Cubes []json.RawMessage `json:"cubes"`
		} `json:"entities"`
	}
	if err := json.Unmarshal(s.First[foxglove.TopicTF], &tf); err != nil || tf.Parent != foxglove.WorldFrame || tf.Child != "uav-0" || tf.Translation["z"] != 10 || tf.Rotation["w"] != 1 {
		t.Errorf("first transform %s (%v)", s.First[foxglove.TopicTF], err)
	}
	if err := json.Unmarshal(s.First[foxglove.FixTopic("uav-0")], &fix); err != nil || fix.Lat < 47.39 || fix.Lat > 47.40 || fix.Lon < 8.54 || fix.Lon > 8.55 {
		t.Errorf("first fix %s (%v): should be at the default origin", s.First[foxglove.FixTopic("uav-0")], err)
	}
	if err := json.Unmarshal(s.First[foxglove.TopicScene], &scene); err != nil || len(scene.Entities) != 5 || scene.Entities[0].ID != "world" || len(scene.Entities[0].Cubes) != 1 {
		t.Errorf("scene %s (%v): want the world with its tower and four vehicles", s.First[foxglove.TopicScene], err)
	}
	for _, topic := range s.Unordered {
		if topic != foxglove.TopicNetwork {
			t.Errorf("topic %s has log times that go back", topic)
		}
	}
	// Determinism: a second run writes the same bytes.
	again := filepath.Join(base, "b")
	runYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 2, AlwaysParallel: true}, again)
	a, _ := os.ReadFile(filepath.Join(run, "run.mcap"))
	b, _ := os.ReadFile(filepath.Join(again, "run.mcap"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("two runs of the same scenario wrote different run.mcap files (%d and %d bytes)", len(a), len(b))
	}
}
