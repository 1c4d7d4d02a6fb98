package mavlink

import (
	"fmt"
	"math"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/message"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Mission protocol timing, as PX4's mission manager: re-request a missing
// item after uploadRetry, give the transfer up after uploadTimeout without
// progress.
const (
	uploadRetry   = 500 * sim.Millisecond
	uploadTimeout = 5 * sim.Second
)

// missionState is the stored mission and its execution.
type missionState struct {
	items     []common.MessageMissionItemInt
	cur       int // current item, -1 when none
	active    bool
	done      bool
	phase     int // 0 start the item, 1 fly to it, 2 hold there
	landing   bool
	holdUntil sim.Time
	target    geom.Vec3
}

// uploadState is an upload in progress (the vehicle requests items one by
// one from its partner).
type uploadState struct {
	active       bool
	partner      Peer
	sys, comp    uint8
	count        int
	items        []common.MessageMissionItemInt
	lastReq      sim.Time
	lastProgress sim.Time
	// The last finished upload, to repeat a lost MISSION_ACK.
	donePeer  Peer
	doneCount int
	doneAt    sim.Time
}

func (u *uploadState) request(v *Vehicle) {
	to := u.partner
	v.send(&to, &common.MessageMissionRequestInt{TargetSystem: u.sys, TargetComponent: u.comp, Seq: uint16(len(u.items))})
	u.lastReq = v.now
}

// retry re-requests a missing item, and gives up on a stalled transfer.
func (u *uploadState) retry(v *Vehicle, now sim.Time) {
	if !u.active {
		return
	}
	if now.Sub(u.lastProgress) > uploadTimeout {
		u.active = false
		to := u.partner
		v.send(&to, &common.MessageMissionAck{TargetSystem: u.sys, TargetComponent: u.comp, Type: common.MAV_MISSION_OPERATION_CANCELLED})
		v.host.Event("mission_upload", fmt.Sprintf("timed out at item %d of %d", len(u.items), u.count))
		return
	}
	if now.Sub(u.lastReq) >= uploadRetry {
		u.request(v)
	}
}

// Limits on mission item parameters, beyond which an item is refused.
const (
	maxLoiterS      = 1e6 // loiter time (s), about 11 days
	maxAcceptRadius = 1e4 // waypoint acceptance radius (m)
)

// checkItem validates one uploaded item.
func checkItem(it *common.MessageMissionItemInt) common.MAV_MISSION_RESULT {
	switch it.Command {
	case common.MAV_CMD_NAV_WAYPOINT, common.MAV_CMD_NAV_TAKEOFF, common.MAV_CMD_NAV_LAND, common.MAV_CMD_NAV_LOITER_TIME:
		switch it.Frame {
		case common.MAV_FRAME_GLOBAL, common.MAV_FRAME_GLOBAL_RELATIVE_ALT, common.MAV_FRAME_GLOBAL_INT, common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT:
		default:
			return common.MAV_MISSION_UNSUPPORTED_FRAME
		}
		if math.Abs(float64(it.X)) > 90e7 || math.Abs(float64(it.Y)) > 180e7 {
			return common.MAV_MISSION_INVALID
		}
		if it.Command == common.MAV_CMD_NAV_LOITER_TIME && !(it.Param1 >= 0 && it.Param1 <= maxLoiterS) {
			return common.MAV_MISSION_INVALID_PARAM1
		}
		if it.Command == common.MAV_CMD_NAV_WAYPOINT {
			if !(it.Param2 <= maxAcceptRadius) && !math.IsNaN(float64(it.Param2)) { // NaN or <= 0: the default
				return common.MAV_MISSION_INVALID_PARAM2
			}
			if math.Abs(float64(it.Param4)) > 360 { // NaN: keep the heading
				return common.MAV_MISSION_INVALID_PARAM4
			}
		}
	case common.MAV_CMD_NAV_RETURN_TO_LAUNCH:
	default:
		return common.MAV_MISSION_UNSUPPORTED
	}
	return common.MAV_MISSION_ACCEPTED
}

// fromFloat converts a MISSION_ITEM (float coordinates) to its integer form.
func fromFloat(m *common.MessageMissionItem) common.MessageMissionItemInt {
	it := common.MessageMissionItemInt{TargetSystem: m.TargetSystem, TargetComponent: m.TargetComponent, Seq: m.Seq,
		Frame: m.Frame, Command: m.Command, Current: m.Current, Autocontinue: m.Autocontinue,
		Param1: m.Param1, Param2: m.Param2, Param3: m.Param3, Param4: m.Param4, Z: m.Z, MissionType: m.MissionType}
	it.X, it.Y = deg7(float64(m.X)), deg7(float64(m.Y))
	switch m.Frame {
	case common.MAV_FRAME_GLOBAL:
		it.Frame = common.MAV_FRAME_GLOBAL_INT
	case common.MAV_FRAME_GLOBAL_RELATIVE_ALT:
		it.Frame = common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT
	}
	return it
}

// toFloat converts an item to MISSION_ITEM for legacy downloads.
func toFloat(it *common.MessageMissionItemInt) *common.MessageMissionItem {
	m := &common.MessageMissionItem{Seq: it.Seq, Frame: it.Frame, Command: it.Command, Current: it.Current,
		Autocontinue: it.Autocontinue, Param1: it.Param1, Param2: it.Param2, Param3: it.Param3, Param4: it.Param4,
		X: float32(float64(it.X) / 1e7), Y: float32(float64(it.Y) / 1e7), Z: it.Z}
	switch it.Frame {
	case common.MAV_FRAME_GLOBAL_INT:
		m.Frame = common.MAV_FRAME_GLOBAL
	case common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT:
		m.Frame = common.MAV_FRAME_GLOBAL_RELATIVE_ALT
	}
	return m
}

// handleMission runs the mission protocol.
func (v *Vehicle) handleMission(to *Peer, sys, comp uint8, msg message.Message) {
	// PX4's mission manager also takes messages for the mission planner
	// component.
	mine := func(s, c uint8) bool {
		return v.forAutopilot(s, c) || v.forAutopilot(s, 0) && c == uint8(common.MAV_COMP_ID_MISSIONPLANNER)
	}
	u := &v.upload
	ack := func(typ common.MAV_MISSION_RESULT, mt common.MAV_MISSION_TYPE) {
		v.send(to, &common.MessageMissionAck{TargetSystem: sys, TargetComponent: comp, Type: typ, MissionType: mt})
	}
	switch m := msg.(type) {
	case *common.MessageMissionCount:
		if !mine(m.TargetSystem, m.TargetComponent) {
			return
		}
		if m.MissionType != common.MAV_MISSION_TYPE_MISSION {
			if m.Count == 0 {
				ack(common.MAV_MISSION_ACCEPTED, m.MissionType)
			} else {
				ack(common.MAV_MISSION_UNSUPPORTED, m.MissionType)
			}
			return
		}
		if m.Count == 0 {
			v.clearMission()
			ack(common.MAV_MISSION_ACCEPTED, m.MissionType)
			return
		}
		*u = uploadState{active: true, partner: *to, sys: sys, comp: comp, count: int(m.Count),
			items: make([]common.MessageMissionItemInt, 0, m.Count), lastProgress: v.now,
			donePeer: u.donePeer, doneCount: u.doneCount, doneAt: u.doneAt}
		u.request(v)
	case *common.MessageMissionItemInt:
		if mine(m.TargetSystem, m.TargetComponent) && m.MissionType == common.MAV_MISSION_TYPE_MISSION {
			v.uploadItem(to, sys, comp, *m)
		}
	case *common.MessageMissionItem:
		if mine(m.TargetSystem, m.TargetComponent) && m.MissionType == common.MAV_MISSION_TYPE_MISSION {
			v.uploadItem(to, sys, comp, fromFloat(m))
		}
	case *common.MessageMissionRequestList:
		if !mine(m.TargetSystem, m.TargetComponent) {
			return
		}
		n := 0
		if m.MissionType == common.MAV_MISSION_TYPE_MISSION {
			n = len(v.mission.items)
		}
		v.send(to, &common.MessageMissionCount{TargetSystem: sys, TargetComponent: comp, Count: uint16(n), MissionType: m.MissionType})
	case *common.MessageMissionRequestInt:
		if mine(m.TargetSystem, m.TargetComponent) && m.MissionType == common.MAV_MISSION_TYPE_MISSION && int(m.Seq) < len(v.mission.items) {
			it := v.mission.items[m.Seq]
			it.TargetSystem, it.TargetComponent = sys, comp
			it.Current = b2u(int(m.Seq) == v.mission.cur)
			v.send(to, &it)
		}
	case *common.MessageMissionRequest:
		if mine(m.TargetSystem, m.TargetComponent) && m.MissionType == common.MAV_MISSION_TYPE_MISSION && int(m.Seq) < len(v.mission.items) {
			it := toFloat(&v.mission.items[m.Seq])
			it.TargetSystem, it.TargetComponent = sys, comp
			it.Current = b2u(int(m.Seq) == v.mission.cur)
			v.send(to, it)
		}
	case *common.MessageMissionClearAll:
		if !mine(m.TargetSystem, m.TargetComponent) {
			return
		}
		if m.MissionType == common.MAV_MISSION_TYPE_MISSION || m.MissionType == common.MAV_MISSION_TYPE_ALL {
			v.clearMission()
		}
		ack(common.MAV_MISSION_ACCEPTED, m.MissionType)
	case *common.MessageMissionSetCurrent:
		if !mine(m.TargetSystem, m.TargetComponent) || int(m.Seq) >= len(v.mission.items) {
			return
		}
		v.mission.cur, v.mission.phase, v.mission.done = int(m.Seq), 0, false
		v.sendMissionCurrent(nil)
	}
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (v *Vehicle) uploadItem(to *Peer, sys, comp uint8, it common.MessageMissionItemInt) {
	u := &v.upload
	if !u.active {
		// The partner did not hear our final ACK: repeat it.
		if *to == u.donePeer && int(it.Seq) == u.doneCount-1 && v.now.Sub(u.doneAt) < 30*sim.Second {
			v.send(to, &common.MessageMissionAck{TargetSystem: sys, TargetComponent: comp, Type: common.MAV_MISSION_ACCEPTED})
		}
		return
	}
	if *to != u.partner {
		return // another station; PX4 refuses a second transfer the same way
	}
	if int(it.Seq) != len(u.items) {
		u.request(v) // a duplicate or out of order: ask again for the one we need
		return
	}
	res := checkItem(&it)
	if res == common.MAV_MISSION_ACCEPTED {
		res = v.checkItemPos(&it)
	}
	if res != common.MAV_MISSION_ACCEPTED {
		u.active = false
		v.send(to, &common.MessageMissionAck{TargetSystem: sys, TargetComponent: comp, Type: res})
		v.host.Event("mission_upload", fmt.Sprintf("rejected item %d (command %d, frame %d): %v", it.Seq, it.Command, it.Frame, res))
		return
	}
	it.TargetSystem, it.TargetComponent, it.Current = 0, 0, 0
	u.items = append(u.items, it)
	u.lastProgress = v.now
	if len(u.items) < u.count {
		u.request(v)
		return
	}
	u.active = false
	u.donePeer, u.doneCount, u.doneAt = *to, u.count, v.now
	m := &v.mission
	m.items, m.cur, m.done, m.phase = u.items, 0, false, 0
	if m.active {
		m.active = false
		v.command(vehicle.Command{Kind: vehicle.CmdHold})
	}
	v.send(to, &common.MessageMissionAck{TargetSystem: sys, TargetComponent: comp, Type: common.MAV_MISSION_ACCEPTED})
	v.host.Event("mission_upload", fmt.Sprintf("%d items", u.count))
	v.sendMissionCurrent(nil)
}

func (v *Vehicle) clearMission() {
	m := &v.mission
	if m.active && v.tel.Armed && !v.tel.Landed {
		v.command(vehicle.Command{Kind: vehicle.CmdHold})
	}
	*m = missionState{cur: -1}
	v.sendMissionCurrent(nil)
}

// startMission starts (or resumes) the mission at item first (< 0: the
// current item, or the first when the mission is new or finished).
func (v *Vehicle) startMission(to *Peer, first int) common.MAV_RESULT {
	m := &v.mission
	if len(m.items) == 0 {
		v.statusText(to, common.MAV_SEVERITY_CRITICAL, "Mission start denied: no mission")
		return common.MAV_RESULT_DENIED
	}
	if first >= 0 && first < len(m.items) {
		m.cur = first
	} else if m.cur < 0 || m.done {
		m.cur = 0
	}
	if !m.active {
		v.host.Event("mission_start", fmt.Sprintf("item %d of %d", m.cur, len(m.items)))
	}
	m.active, m.done, m.phase, m.landing = true, false, 0, false
	v.offboard, v.keep = false, FlightMode{}
	v.sendMissionCurrent(nil)
	return common.MAV_RESULT_ACCEPTED
}

// checkItemPos refuses an item whose position, in the local frame, is not
// one a vehicle can be commanded to (vehicle.Command.Validate), looking
// only at the coordinates the item's command uses.
func (v *Vehicle) checkItemPos(it *common.MessageMissionItemInt) common.MAV_MISSION_RESULT {
	p := v.itemPos(it)
	switch it.Command {
	case common.MAV_CMD_NAV_TAKEOFF:
		p.X, p.Y = 0, 0 // climbs where it is
	case common.MAV_CMD_NAV_LAND:
		if it.X == 0 && it.Y == 0 {
			return common.MAV_MISSION_ACCEPTED // lands where it is
		}
		p.Z = 0 // the altitude is not used
	case common.MAV_CMD_NAV_WAYPOINT, common.MAV_CMD_NAV_LOITER_TIME:
	default:
		return common.MAV_MISSION_ACCEPTED
	}
	if (vehicle.Command{Kind: vehicle.CmdGoto, Pos: p, Yaw: math.NaN()}).Validate() != nil {
		return common.MAV_MISSION_INVALID
	}
	return common.MAV_MISSION_ACCEPTED
}

// itemPos returns an item's position in local coordinates.
func (v *Vehicle) itemPos(it *common.MessageMissionItemInt) geom.Vec3 {
	return v.globalToLocal(float64(it.X)/1e7, float64(it.Y)/1e7, float64(it.Z), it.Frame)
}

// runMission advances the active mission.
func (v *Vehicle) runMission() {
	m := &v.mission
	if !m.active || m.cur < 0 || m.cur >= len(m.items) {
		return
	}
	t := &v.tel
	it := &m.items[m.cur]
	landing := it.Command == common.MAV_CMD_NAV_LAND || it.Command == common.MAV_CMD_NAV_RETURN_TO_LAUNCH
	if m.phase > 0 && !landing && (t.Mode == vehicle.ModeLand || t.Mode == vehicle.ModeRTL) {
		// The autopilot's own failsafe took over: the mission pauses.
		m.active = false
		v.host.Event("mission_pause", "autopilot failsafe")
		return
	}
	if !t.Armed {
		if m.phase > 0 && landing {
			v.nextItem() // landed and disarmed: the mission is over
		}
		return // a mission starts when the vehicle is armed
	}
	switch m.phase {
	case 0:
		m.target = v.itemPos(it)
		m.phase, m.landing = 1, false
		switch it.Command {
		case common.MAV_CMD_NAV_TAKEOFF:
			if t.Landed || t.Mode == vehicle.ModeIdle {
				v.command(vehicle.Command{Kind: vehicle.CmdTakeoff, Alt: m.target.Z - v.cfg.Home.Z})
			} else {
				v.command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(t.Pos.X, t.Pos.Y, m.target.Z), Yaw: math.NaN(), Speed: v.speedLim})
			}
		case common.MAV_CMD_NAV_WAYPOINT, common.MAV_CMD_NAV_LOITER_TIME:
			yaw := math.NaN()
			if it.Command == common.MAV_CMD_NAV_WAYPOINT && !math.IsNaN(float64(it.Param4)) {
				yaw = geom.HeadingToYaw(float64(it.Param4) * math.Pi / 180)
			}
			v.command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: m.target, Yaw: yaw, Speed: v.speedLim})
		case common.MAV_CMD_NAV_LAND:
			if it.X == 0 && it.Y == 0 || t.Pos.Sub(m.target).NormXY() <= v.ep.AccRad {
				m.landing = true
				v.command(vehicle.Command{Kind: vehicle.CmdLand})
			} else {
				v.command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(m.target.X, m.target.Y, t.Pos.Z), Yaw: math.NaN(), Speed: v.speedLim})
			}
		case common.MAV_CMD_NAV_RETURN_TO_LAUNCH:
			m.landing = true
			v.command(vehicle.Command{Kind: vehicle.CmdRTL})
		}
	case 1:
		dz := math.Abs(t.Pos.Z - m.target.Z)
		switch it.Command {
		case common.MAV_CMD_NAV_TAKEOFF:
			if dz < v.ep.AltRad {
				v.reached(0)
			}
		case common.MAV_CMD_NAV_WAYPOINT, common.MAV_CMD_NAV_LOITER_TIME:
			acc := v.ep.AccRad
			if it.Command == common.MAV_CMD_NAV_WAYPOINT && it.Param2 > 0 {
				acc = float64(it.Param2)
			}
			if t.Pos.Sub(m.target).NormXY() < acc && dz < v.ep.AltRad {
				if it.Command == common.MAV_CMD_NAV_LOITER_TIME {
					v.milestone("LOITER")
					if v.OnLoiter != nil {
						v.OnLoiter(v.now)
					}
				}
				v.reached(sim.Duration(math.Round(float64(it.Param1) * 1e9)))
			}
		case common.MAV_CMD_NAV_LAND, common.MAV_CMD_NAV_RETURN_TO_LAUNCH:
			if !m.landing && t.Pos.Sub(m.target).NormXY() <= v.ep.AccRad {
				m.landing = true
				v.command(vehicle.Command{Kind: vehicle.CmdLand})
			}
			if m.landing && t.Landed && t.Mode == vehicle.ModeIdle {
				v.nextItem()
			}
		}
	case 2:
		if v.now >= m.holdUntil {
			v.nextItem()
		}
	}
}

// reached reports the current item reached and holds there for hold.
func (v *Vehicle) reached(hold sim.Duration) {
	m := &v.mission
	v.send(nil, &common.MessageMissionItemReached{Seq: uint16(m.cur)})
	m.phase, m.holdUntil = 2, v.now.Add(hold)
	if hold <= 0 {
		v.nextItem()
	}
}

func (v *Vehicle) nextItem() {
	m := &v.mission
	if m.phase == 1 {
		v.send(nil, &common.MessageMissionItemReached{Seq: uint16(m.cur)})
	}
	m.cur++
	m.phase = 0
	if m.cur >= len(m.items) {
		m.cur = len(m.items) - 1
		m.active, m.done = false, true
		v.host.Event("mission_done", fmt.Sprintf("%d items", len(m.items)))
	}
	v.sendMissionCurrent(nil)
}

func (v *Vehicle) sendMissionCurrent(to *Peer) {
	m := &v.mission
	state := common.MISSION_STATE_NO_MISSION
	switch {
	case len(m.items) == 0:
	case m.done:
		state = common.MISSION_STATE_COMPLETE
	case m.active:
		state = common.MISSION_STATE_ACTIVE
	case m.cur > 0:
		state = common.MISSION_STATE_PAUSED
	default:
		state = common.MISSION_STATE_NOT_STARTED
	}
	v.send(to, &common.MessageMissionCurrent{Seq: uint16(max(m.cur, 0)), Total: uint16(len(m.items)), MissionState: state,
		MissionMode: b2u(m.active)})
}
