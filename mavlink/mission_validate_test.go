package mavlink

import (
	"math"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
)

// TestImplausibleMissionItemsRefused: mission items come from a network
// peer; coordinates, altitudes and parameters no vehicle can fly are
// refused at upload with a MAV_MISSION_* error, never stored.
func TestImplausibleMissionItemsRefused(t *testing.T) {
	v, _, _ := newRecVehicle()
	lat, lon := int32(testOrigin.Lat*1e7), int32(testOrigin.Lon*1e7)
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	item := func(cmd common.MAV_CMD, x, y int32, z float32, p1, p2, p4 float32) common.MessageMissionItemInt {
		return common.MessageMissionItemInt{Command: cmd, Frame: common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, X: x, Y: y, Z: z,
			Param1: p1, Param2: p2, Param4: p4, MissionType: common.MAV_MISSION_TYPE_MISSION}
	}
	wp, loiter := common.MAV_CMD_NAV_WAYPOINT, common.MAV_CMD_NAV_LOITER_TIME
	for _, c := range []struct {
		name string
		it   common.MessageMissionItemInt
		ok   bool
	}{
		{"waypoint", item(wp, lat, lon, 10, 0, 0, nan), true},
		{"land here, altitude NaN", item(common.MAV_CMD_NAV_LAND, 0, 0, nan, 0, 0, 0), true},
		{"takeoff", item(common.MAV_CMD_NAV_TAKEOFF, 0, 0, 10, 0, 0, 0), true},
		{"waypoint altitude NaN (keep the altitude)", item(wp, lat, lon, nan, 0, 0, nan), true},
		{"waypoint altitude 1e30", item(wp, lat, lon, 1e30, 0, 0, nan), false},
		{"waypoint on the other side of the earth", item(wp, -lat, lon+1800000000, 10, 0, 0, nan), false},
		{"takeoff altitude inf", item(common.MAV_CMD_NAV_TAKEOFF, 0, 0, inf, 0, 0, 0), false},
		{"loiter 1e30 s", item(loiter, lat, lon, 10, 1e30, 0, 0), false},
		{"loiter NaN s", item(loiter, lat, lon, 10, nan, 0, 0), false},
		{"acceptance radius inf", item(wp, lat, lon, 10, 0, inf, nan), false},
		{"yaw 1e9 deg", item(wp, lat, lon, 10, 0, 0, 1e9), false},
	} {
		res := checkItem(&c.it)
		if res == common.MAV_MISSION_ACCEPTED {
			res = v.checkItemPos(&c.it)
		}
		if (res == common.MAV_MISSION_ACCEPTED) != c.ok {
			t.Errorf("%s: %v", c.name, res)
		}
	}
}
