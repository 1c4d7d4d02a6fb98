package foxglove

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestLayoutFile: the Foxglove layout shipped for skyloop runs parses,
// places every panel it configures, and names the topics skyloop writes.
func TestLayoutFile(t *testing.T) {
	b, err := os.ReadFile("layout.json")
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		ConfigByID map[string]map[string]any `json:"configById"`
		Layout     any                       `json:"layout"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	placed := map[string]bool{}
	var walk func(n any)
	walk = func(n any) {
		switch v := n.(type) {
		case string:
			placed[v] = true
		case map[string]any:
			walk(v["first"])
			walk(v["second"])
		}
	}
	walk(l.Layout)
	for id := range l.ConfigByID {
		if !placed[id] {
			t.Errorf("panel %s is configured but not placed", id)
		}
	}
	if len(placed) != len(l.ConfigByID) {
		t.Errorf("%d panels placed, %d configured", len(placed), len(l.ConfigByID))
	}
	text := string(b)
	for _, topic := range []string{TopicScene, TopicEvents, TelemetryTopic("uav-0"), `"followTf": "` + WorldFrame + `"`} {
		if !strings.Contains(text, topic) {
			t.Errorf("layout.json does not name %s", topic)
		}
	}
}
