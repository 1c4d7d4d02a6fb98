package mavlink

import (
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/message"

	"skyloop/geom"
	"skyloop/sim"
)

// gcsSend sends one message to the vehicle as system 255.
func (f *flyer) gcsSend(m message.Message) {
	if f.cl.enc == nil {
		f.t.Fatal("no client encoder")
	}
	b, err := f.cl.enc.Encode(m)
	if err != nil {
		f.t.Fatal(err)
	}
	f.toVeh = append(f.toVeh, append([]byte(nil), b...))
}

func missionOps(items []Item) []Op {
	return []Op{
		{Kind: OpConnect, Name: "connect"},
		{Kind: OpUpload, Name: "upload", Items: items},
		{Kind: OpCommand, Name: "arm", Cmd: common.MAV_CMD_COMPONENT_ARM_DISARM, Params: [7]float32{1}},
		{Kind: OpCommand, Name: "mission_start", Cmd: common.MAV_CMD_MISSION_START},
		{Kind: OpWaitLanded, Name: "landed"},
	}
}

var twoWaypoints = []Item{
	{Cmd: common.MAV_CMD_NAV_TAKEOFF, Offset: geom.V(0, 0, 5)},
	{Cmd: common.MAV_CMD_NAV_WAYPOINT, Offset: geom.V(10, 0, 5)},
	{Cmd: common.MAV_CMD_NAV_LOITER_TIME, Offset: geom.V(10, 10, 6), Hold: 3 * sim.Second},
	{Cmd: common.MAV_CMD_NAV_LAND, Here: true},
}

func TestMissionFliesAndReportsProgress(t *testing.T) {
	f := newFlyer(t, 0)
	f.cl.Add(missionOps(twoWaypoints)...)
	if !f.run(90*sim.Second, func() bool { return f.cl.Done() }) || f.cl.Failed {
		t.Fatalf("mission did not complete: %+v, events %v", f.cl.Results, f.events)
	}
	p := f.mr.Telemetry().Pos
	if p.Sub(geom.V(10, 10, 0)).NormXY() > 2.5 || p.Z > 0.05 {
		t.Errorf("landed at %v, want near (10, 10, 0)", p)
	}
	reached := map[uint16]bool{}
	for _, fr := range f.heard {
		if m, ok := fr.GetMessage().(*common.MessageMissionItemReached); ok {
			reached[m.Seq] = true
		}
	}
	for s := uint16(0); s < 4; s++ {
		if !reached[s] {
			t.Errorf("no MISSION_ITEM_REACHED for item %d", s)
		}
	}
	mc := f.last(42).GetMessage().(*common.MessageMissionCurrent)
	if mc.MissionState != common.MISSION_STATE_COMPLETE || mc.Total != 4 {
		t.Errorf("final MISSION_CURRENT %+v", mc)
	}
	if _, ok := f.ep.Milestones["LOITER"]; !ok {
		t.Error("no LOITER milestone")
	}
	// Download it back: count, then each item.
	f.gcsSend(&common.MessageMissionRequestList{TargetSystem: 1, TargetComponent: 1})
	f.run(50*sim.Millisecond, nil)
	cnt, ok := f.last(44).GetMessage().(*common.MessageMissionCount)
	if !ok || cnt.Count != 4 {
		t.Fatalf("MISSION_COUNT %+v", cnt)
	}
	for s := uint16(0); s < 4; s++ {
		f.gcsSend(&common.MessageMissionRequestInt{TargetSystem: 1, TargetComponent: 1, Seq: s})
		f.run(30*sim.Millisecond, nil)
		it, ok := f.last(73).GetMessage().(*common.MessageMissionItemInt)
		if !ok || it.Seq != s || it.Command != f.cl.upload[s].Command || it.X != f.cl.upload[s].X {
			t.Fatalf("downloaded item %d: %+v, uploaded %+v", s, it, f.cl.upload[s])
		}
	}
	// Legacy float request.
	f.gcsSend(&common.MessageMissionRequest{TargetSystem: 1, TargetComponent: 1, Seq: 1})
	f.run(30*sim.Millisecond, nil)
	if it, ok := f.last(39).GetMessage().(*common.MessageMissionItem); !ok || it.Frame != common.MAV_FRAME_GLOBAL_RELATIVE_ALT || it.Z != 5 {
		t.Fatalf("MISSION_ITEM %+v", it)
	}
	// Clear.
	f.gcsSend(&common.MessageMissionClearAll{TargetSystem: 1, TargetComponent: 1})
	f.run(30*sim.Millisecond, nil)
	if a := f.last(47).GetMessage().(*common.MessageMissionAck); a.Type != common.MAV_MISSION_ACCEPTED || len(f.ep.Mission()) != 0 {
		t.Fatalf("clear: ack %+v, %d items left", a, len(f.ep.Mission()))
	}
}

func TestMissionCompletesOverLossyLinkButLater(t *testing.T) {
	var done [2]sim.Time
	var sends [2]int
	for i, loss := range []float64{0, 0.3} {
		f := newFlyer(t, loss)
		f.cl.Add(missionOps(twoWaypoints)...)
		if !f.run(120*sim.Second, func() bool { return f.cl.Done() }) || f.cl.Failed {
			t.Fatalf("loss %.0f%%: mission did not complete: %+v", loss*100, f.cl.Results)
		}
		r, _ := f.cl.Result("mission_start")
		done[i] = r.End
		for _, r := range f.cl.Results {
			sends[i] += r.Attempts
		}
		if loss > 0 && f.lost == 0 {
			t.Fatal("nothing was lost")
		}
	}
	if !(done[1] > done[0]) || !(sends[1] > sends[0]) {
		t.Fatalf("commands done at %v with 0%% loss, %v with 30%%; sends %d vs %d", done[0], done[1], sends[0], sends[1])
	}
	t.Logf("commands done at %v (0%% loss) and %v (30%%), %d and %d sends", done[0], done[1], sends[0], sends[1])
}

func TestMissionUploadRejectsUnsupportedItems(t *testing.T) {
	f := newFlyer(t, 0)
	f.run(20*sim.Millisecond, nil)
	f.gcsSend(&common.MessageMissionCount{TargetSystem: 1, TargetComponent: 1, Count: 1})
	f.run(30*sim.Millisecond, nil)
	f.gcsSend(&common.MessageMissionItemInt{TargetSystem: 1, TargetComponent: 1, Seq: 0, Command: common.MAV_CMD_DO_SET_SERVO,
		Frame: common.MAV_FRAME_MISSION})
	f.run(30*sim.Millisecond, nil)
	if a := f.last(47).GetMessage().(*common.MessageMissionAck); a.Type != common.MAV_MISSION_UNSUPPORTED {
		t.Fatalf("ack %v, want MAV_MISSION_UNSUPPORTED", a.Type)
	}
	f.gcsSend(&common.MessageMissionCount{TargetSystem: 1, TargetComponent: 1, Count: 1})
	f.run(30*sim.Millisecond, nil)
	f.gcsSend(&common.MessageMissionItemInt{TargetSystem: 1, TargetComponent: 1, Seq: 0, Command: common.MAV_CMD_NAV_WAYPOINT,
		Frame: common.MAV_FRAME_LOCAL_ENU})
	f.run(30*sim.Millisecond, nil)
	if a := f.last(47).GetMessage().(*common.MessageMissionAck); a.Type != common.MAV_MISSION_UNSUPPORTED_FRAME {
		t.Fatalf("ack %v, want MAV_MISSION_UNSUPPORTED_FRAME", a.Type)
	}
	// A stalled upload times out with OPERATION_CANCELLED after re-requests.
	f.gcsSend(&common.MessageMissionCount{TargetSystem: 1, TargetComponent: 1, Count: 2})
	f.run(6*sim.Second, nil)
	reqs := 0
	for _, fr := range f.heard {
		if m, ok := fr.GetMessage().(*common.MessageMissionRequestInt); ok && m.Seq == 0 {
			reqs++
		}
	}
	if a := f.last(47).GetMessage().(*common.MessageMissionAck); a.Type != common.MAV_MISSION_OPERATION_CANCELLED || reqs < 5 {
		t.Fatalf("stalled upload: ack %v after %d requests", a.Type, reqs)
	}
}
