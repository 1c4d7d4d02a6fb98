// Flies a skyloop MAVLink vehicle with node-mavlink, a MAVLink library
// skyloop did not write: wait for a heartbeat, arm, take off to 5 m, upload
// and fly a 2-waypoint mission, land, and check the telemetry on the way.
//
// usage: node fly.js RECEIVE_PORT SEND_PORT HOME_AMSL
// Prints one JSON line with what it saw; exits 1 with a reason on failure.
'use strict'
const { MavEsp8266, minimal, common, MavLinkPacketRegistry } = require('node-mavlink')

const [recvPort, sendPort, homeAmsl] = process.argv.slice(2).map(Number)
const REGISTRY = { ...minimal.REGISTRY, ...common.REGISTRY }
const SYS = 250, COMP = 190, TARGET = 1

// MAVLink numbers (common.xml).
const CMD_ARM = 400, CMD_TAKEOFF = 22, CMD_LAND = 21, CMD_MISSION_START = 300, CMD_WAYPOINT = 16
const FRAME_GLOBAL_RELATIVE_ALT_INT = 6, RESULT_ACCEPTED = 0, MISSION_ACCEPTED = 0, ON_GROUND = 1, SAFETY_ARMED = 128

const seen = { heartbeats: 0, maxRelAlt: 0, acks: {}, reached: [], positions: 0, armedSeen: false, landedDisarmed: false }
let last = {} // newest message of each name
const waiters = []

function fail(why) {
  console.log(JSON.stringify({ ok: false, why, seen }))
  process.exit(1)
}
setTimeout(() => fail('timed out'), 120000).unref()

function waitFor(pred, what, ms = 60000) {
  return new Promise((resolve, reject) => {
    const w = { pred, resolve }
    waiters.push(w)
    setTimeout(() => reject(new Error('timed out waiting for ' + what)), ms).unref()
  })
}

async function main() {
  const port = new MavEsp8266()
  port.on('data', packet => {
    if (packet.header.sysid !== TARGET) return
    const clazz = REGISTRY[packet.header.msgid]
    if (!clazz) return
    const m = packet.protocol.data(packet.payload, clazz)
    const name = clazz.MSG_NAME
    last[name] = m
    if (name === 'HEARTBEAT') {
      seen.heartbeats++
      if (m.baseMode & SAFETY_ARMED) seen.armedSeen = true
    }
    if (name === 'GLOBAL_POSITION_INT') {
      seen.positions++
      seen.maxRelAlt = Math.max(seen.maxRelAlt, m.relativeAlt / 1000)
    }
    if (name === 'COMMAND_ACK') seen.acks[m.command] = m.result
    if (name === 'MISSION_ITEM_REACHED' && !seen.reached.includes(m.seq)) seen.reached.push(m.seq)
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i].pred(name, m)) {
        waiters[i].resolve(m)
        waiters.splice(i, 1)
      }
    }
  })
  // Binding to RECEIVE_PORT; the vehicle's first datagram tells where it is.
  await port.start(recvPort, sendPort, '127.0.0.1')
  const send = msg => port.send(msg, SYS, COMP)

  await waitFor(n => n === 'HEARTBEAT', 'a heartbeat')
  const home = await waitFor(n => n === 'GLOBAL_POSITION_INT', 'a position')

  async function command(cmd, params) {
    for (let attempt = 0; attempt < 10; attempt++) {
      const c = new common.CommandLong()
      c.targetSystem = TARGET
      c.targetComponent = 1
      c.command = cmd
      c.confirmation = attempt
      params.forEach((p, i) => { c['_param' + (i + 1)] = p })
      await send(c)
      try {
        const ack = await waitFor((n, m) => n === 'COMMAND_ACK' && m.command === cmd, 'ack of ' + cmd, 1000)
        if (ack.result === RESULT_ACCEPTED) return
      } catch (e) { /* resend */ }
    }
    fail('command ' + cmd + ' not accepted')
  }

  await command(CMD_ARM, [1, 0, 0, 0, 0, 0, 0])
  await command(CMD_TAKEOFF, [0, 0, 0, NaN, NaN, NaN, homeAmsl + 5])
  await waitFor((n, m) => n === 'GLOBAL_POSITION_INT' && m.relativeAlt > 4500, 'reaching 4.5 m')

  // Two waypoints: 10 m north, then 10 m north and 10 m east, at 5 m.
  const degPerM = 1 / 111194.9266
  const wps = [[10, 0], [10, 10]].map(([n, e]) => [home.lat + Math.round(n * degPerM * 1e7),
    home.lon + Math.round(e * degPerM / Math.cos(home.lat / 1e7 * Math.PI / 180) * 1e7)])
  const count = new common.MissionCount()
  count.targetSystem = TARGET
  count.targetComponent = 1
  count.count = wps.length
  count.missionType = 0
  const acked = waitFor(n => n === 'MISSION_ACK', 'the mission ack', 10000)
  let sent = 0
  const onRequest = async () => {
    while (sent < wps.length) {
      const req = await waitFor((n, m) => n === 'MISSION_REQUEST_INT' || n === 'MISSION_REQUEST', 'an item request', 10000)
      const it = new common.MissionItemInt()
      it.targetSystem = TARGET
      it.targetComponent = 1
      it.seq = req.seq
      it.frame = FRAME_GLOBAL_RELATIVE_ALT_INT
      it.command = CMD_WAYPOINT
      it.current = 0
      it.autocontinue = 1
      it.param1 = 0; it.param2 = 0; it.param3 = 0; it.param4 = NaN
      it.x = wps[req.seq][0]
      it.y = wps[req.seq][1]
      it.z = 5
      it.missionType = 0
      await send(it)
      sent = Math.max(sent, req.seq + 1)
    }
  }
  const requests = onRequest()
  await send(count)
  await requests
  const ack = await acked
  if (ack.type !== MISSION_ACCEPTED) fail('mission rejected: ' + ack.type)

  await command(CMD_MISSION_START, [0, 0, 0, 0, 0, 0, 0])
  await waitFor((n, m) => n === 'MISSION_ITEM_REACHED' && m.seq === 1, 'the second waypoint', 60000)
  const atWp2 = last.GLOBAL_POSITION_INT

  await command(CMD_LAND, [0, 0, 0, NaN, NaN, NaN, NaN])
  await waitFor((n, m) => n === 'EXTENDED_SYS_STATE' && m.landedState === ON_GROUND && last.HEARTBEAT &&
    !(last.HEARTBEAT.baseMode & SAFETY_ARMED), 'landing and disarming', 60000)
  seen.landedDisarmed = true
  const dn = (atWp2.lat - home.lat) / 1e7 / degPerM
  const de = (atWp2.lon - home.lon) / 1e7 / degPerM * Math.cos(home.lat / 1e7 * Math.PI / 180)
  console.log(JSON.stringify({ ok: true, north_at_wp2: dn, east_at_wp2: de, seen }))
  await port.close()
  process.exit(0)
}

main().catch(e => fail(String(e && e.stack || e)))
