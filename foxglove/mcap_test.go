package foxglove

import (
	"bytes"
	"strings"
	"testing"

	"github.com/foxglove/mcap/go/mcap"

	"skyloop/sim"
)

// TestMCAPSummary writes a small run.mcap and reads it back with the MCAP
// library's indexed reader: the header names the profile and the library,
// and the statistics record counts every channel's messages, 0 for a
// channel that carried none.
func TestMCAPSummary(t *testing.T) {
	var buf bytes.Buffer
	m := NewMCAP(&buf)
	chans := []Channel{{ID: 1, Topic: "/a", SchemaID: schemas[0].id}, {ID: 2, Topic: "/b", SchemaID: schemas[0].id}, {ID: 3, Topic: "/empty", SchemaID: schemas[0].id}}
	if err := m.Start(Run{Scenario: "s", Seed: 1, Vehicles: 1}, chans); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		m.Message(1, 0, sim.Time(int64(i)*int64(sim.Millisecond)), []byte(`{}`))
	}
	m.Message(2, 0, sim.Time(7*sim.Millisecond), []byte(`{}`))
	if err := m.End(); err != nil {
		t.Fatal(err)
	}
	r, err := mcap.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Header.Profile != MCAPProfile || !strings.Contains(info.Header.Library, "skyloop") {
		t.Errorf("header profile %q library %q, want %q, skyloop", info.Header.Profile, info.Header.Library, MCAPProfile)
	}
	st := info.Statistics
	if st == nil {
		t.Fatal("no statistics record")
	}
	want := map[uint16]uint64{1: 5, 2: 1, 3: 0}
	if len(st.ChannelMessageCounts) != len(want) {
		t.Errorf("statistics count %d channels %v, want %v", len(st.ChannelMessageCounts), st.ChannelMessageCounts, want)
	}
	for id, n := range want {
		if got, ok := st.ChannelMessageCounts[id]; !ok || got != n {
			t.Errorf("channel %d: statistics count %d (present %v), want %d", id, got, ok, n)
		}
	}
	if st.MessageCount != 6 || st.ChannelCount != 3 {
		t.Errorf("statistics: %d messages, %d channels; want 6, 3", st.MessageCount, st.ChannelCount)
	}
}
