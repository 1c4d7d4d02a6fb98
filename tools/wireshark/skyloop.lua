-- Wireshark/tshark dissector for skyloop's own payloads in a run's
-- packets.pcap (outputs: {pcap: true}, or a wifi backend's capture).
--
--   wireshark -X lua_script:tools/wireshark/skyloop.lua runs/quickstart/seed1/packets.pcap
--   tshark -X lua_script:tools/wireshark/skyloop.lua -r packets.pcap -Y skyloop \
--       -T fields -e skyloop.kind -e skyloop.id -e skyloop.seq -e skyloop.x
--
-- Or copy the file into Wireshark's personal plugins folder (Help > About >
-- Folders). Formats (all little-endian; docs/outputs.md has them too):
--
--   UDP 5000, state update (beacon, kind state), by length:
--     56 bytes, planar: id u32, seq u32, t_gen i64 ns, x, y, theta, v, omega f64
--     72 bytes, 3D:     id u32, seq u32, t_gen i64 ns, x, y, z, vx, vy, vz, yaw f64
--     A beacon with size: N pads with zeros: 56..71 bytes read as planar,
--     72 and more as 3D (set the "state_format" preference to force one).
--   UDP 5001, ground-station link, by length:
--     35 bytes, command (kind cmd, gcs -> vehicle): op u8 (1 goto, 2 land,
--       3 hold, 4 rtl, 5 heartbeat), seq u32, leg u16, x, y, z f64, speed f32
--     60 bytes, telemetry (kind telem, vehicle -> gcs): id u32, seq u32,
--       leg u16 (65535: none yet), mode u8, flags u8 (1 armed, 2 landed),
--       x, y, z, vx, vy, vz f64
--
-- Positions are metres in the scenario's local frame (x east, y north,
-- z up); t_gen is simulated nanoseconds. MAVLink keeps its own ports
-- (14540+, 14550, 14580+) and Wireshark's MAVLink dissector.

local p = Proto("skyloop", "skyloop payload")

local kinds = { [1] = "state", [2] = "command", [3] = "telemetry" }
local ops = { [1] = "goto", [2] = "land", [3] = "hold", [4] = "rtl", [5] = "heartbeat" }
local modes = { [0] = "disarmed", [1] = "idle", [2] = "takeoff", [3] = "hold", [4] = "goto",
	[5] = "velocity", [6] = "drive", [7] = "land", [8] = "rtl" }

local f = {
	kind = ProtoField.string("skyloop.kind", "Kind"),
	format = ProtoField.string("skyloop.format", "State format"),
	id = ProtoField.uint32("skyloop.id", "Node id"),
	seq = ProtoField.uint32("skyloop.seq", "Sequence"),
	tgen = ProtoField.int64("skyloop.t_gen", "Generated at (ns, simulated)"),
	x = ProtoField.double("skyloop.x", "x (m, east)"),
	y = ProtoField.double("skyloop.y", "y (m, north)"),
	z = ProtoField.double("skyloop.z", "z (m, up)"),
	vx = ProtoField.double("skyloop.vx", "vx (m/s)"),
	vy = ProtoField.double("skyloop.vy", "vy (m/s)"),
	vz = ProtoField.double("skyloop.vz", "vz (m/s)"),
	yaw = ProtoField.double("skyloop.yaw", "Yaw / heading (rad)"),
	v = ProtoField.double("skyloop.v", "Forward speed (m/s)"),
	omega = ProtoField.double("skyloop.omega", "Turn rate (rad/s)"),
	op = ProtoField.uint8("skyloop.op", "Command", base.DEC, ops),
	leg = ProtoField.uint16("skyloop.leg", "Leg"),
	speed = ProtoField.float("skyloop.speed", "Speed (m/s)"),
	mode = ProtoField.uint8("skyloop.mode", "Mode", base.DEC, modes),
	armed = ProtoField.bool("skyloop.armed", "Armed"),
	landed = ProtoField.bool("skyloop.landed", "Landed"),
	padding = ProtoField.bytes("skyloop.padding", "Padding"),
}
p.fields = f

p.prefs.state_port = Pref.uint("State update port", 5000, "UDP port of state updates (beacon port)")
p.prefs.gcs_port = Pref.uint("Ground-station port", 5001, "UDP port of commands and telemetry (gcs and remote port)")
p.prefs.state_format = Pref.enum("State format", 0, "How to read state updates",
	{ { 1, "by length", 0 }, { 2, "planar (56 bytes)", 56 }, { 3, "3D (72 bytes)", 72 } }, false)

local function doubles(tree, buf, off, fields)
	for _, fld in ipairs(fields) do
		tree:add_le(fld, buf(off, 8))
		off = off + 8
	end
	return off
end

local function state(buf, pinfo, tree)
	local n = buf:len()
	local size = p.prefs.state_format
	if size == 0 then
		if n >= 72 then size = 72 elseif n >= 56 then size = 56 else return 0 end
	end
	if n < size then return 0 end
	local t = tree:add(p, buf(0, n), "skyloop state update")
	t:add(f.kind, "state")
	t:add_le(f.id, buf(0, 4))
	t:add_le(f.seq, buf(4, 4))
	t:add_le(f.tgen, buf(8, 8))
	local off
	if size == 56 then
		t:add(f.format, "planar")
		off = doubles(t, buf, 16, { f.x, f.y, f.yaw, f.v, f.omega })
	else
		t:add(f.format, "3D")
		off = doubles(t, buf, 16, { f.x, f.y, f.z, f.vx, f.vy, f.vz, f.yaw })
	end
	if n > off then t:add(f.padding, buf(off, n - off)) end
	pinfo.cols.info = string.format("state id=%d seq=%d", buf(0, 4):le_uint(), buf(4, 4):le_uint())
	return n
end

local function command(buf, pinfo, tree)
	local t = tree:add(p, buf(0, 35), "skyloop command")
	t:add(f.kind, "command")
	t:add_le(f.op, buf(0, 1))
	t:add_le(f.seq, buf(1, 4))
	t:add_le(f.leg, buf(5, 2))
	doubles(t, buf, 7, { f.x, f.y, f.z })
	t:add_le(f.speed, buf(31, 4))
	pinfo.cols.info = string.format("command %s seq=%d leg=%d", ops[buf(0, 1):uint()] or "?", buf(1, 4):le_uint(), buf(5, 2):le_uint())
	return 35
end

local function telemetry(buf, pinfo, tree)
	local t = tree:add(p, buf(0, 60), "skyloop telemetry")
	t:add(f.kind, "telemetry")
	t:add_le(f.id, buf(0, 4))
	t:add_le(f.seq, buf(4, 4))
	t:add_le(f.leg, buf(8, 2))
	t:add_le(f.mode, buf(10, 1))
	local flags = buf(11, 1):uint()
	t:add(f.armed, buf(11, 1), bit.band(flags, 1) ~= 0)
	t:add(f.landed, buf(11, 1), bit.band(flags, 2) ~= 0)
	doubles(t, buf, 12, { f.x, f.y, f.z, f.vx, f.vy, f.vz })
	pinfo.cols.info = string.format("telemetry id=%d seq=%d mode=%s", buf(0, 4):le_uint(), buf(4, 4):le_uint(), modes[buf(10, 1):uint()] or "?")
	return 60
end

function p.dissector(buf, pinfo, tree)
	local port = pinfo.dst_port
	local n = buf:len()
	local done = 0
	if port == p.prefs.state_port then
		done = state(buf, pinfo, tree)
	elseif port == p.prefs.gcs_port and n == 35 then
		done = command(buf, pinfo, tree)
	elseif port == p.prefs.gcs_port and n == 60 then
		done = telemetry(buf, pinfo, tree)
	end
	if done > 0 then pinfo.cols.protocol = "skyloop" end
	return done
end

local registered = {}
local function register()
	local udp = DissectorTable.get("udp.port")
	for _, port in ipairs(registered) do udp:remove(port, p) end
	registered = { p.prefs.state_port, p.prefs.gcs_port }
	for _, port in ipairs(registered) do udp:add(port, p) end
end
p.prefs_changed = register
register()
