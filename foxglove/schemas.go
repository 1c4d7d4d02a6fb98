package foxglove

// JSON Schemas of the messages run.mcap carries. The foxglove.* names and
// field names are Foxglove's well-known schemas (docs.foxglove.dev, "Message
// schemas"), which its 3D, Map and Log panels recognise by name; the
// skyloop.* ones are ours, for the Raw Message, Plot and State Transitions
// panels. Each schema lists only the fields skyloop writes.

const timeSchema = `{"type":"object","properties":{"sec":{"type":"integer","minimum":0},"nsec":{"type":"integer","minimum":0,"maximum":999999999}}}`

const vec3Schema = `{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"},"z":{"type":"number"}}}`

const quatSchema = `{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"},"z":{"type":"number"},"w":{"type":"number"}}}`

// frameTransformSchema is foxglove.FrameTransform.
const frameTransformSchema = `{"title":"foxglove.FrameTransform","description":"A transform between two reference frames in 3D space","type":"object","properties":{` +
	`"timestamp":` + timeSchema + `,"parent_frame_id":{"type":"string"},"child_frame_id":{"type":"string"},` +
	`"translation":` + vec3Schema + `,"rotation":` + quatSchema + `}}`

// sceneUpdateSchema is foxglove.SceneUpdate with cube primitives.
const sceneUpdateSchema = `{"title":"foxglove.SceneUpdate","description":"An update to the entities displayed in a 3D scene","type":"object","properties":{` +
	`"deletions":{"type":"array","items":{"type":"object","properties":{"timestamp":` + timeSchema + `,"type":{"type":"integer"},"id":{"type":"string"}}}},` +
	`"entities":{"type":"array","items":{"type":"object","properties":{` +
	`"timestamp":` + timeSchema + `,"frame_id":{"type":"string"},"id":{"type":"string"},"lifetime":` + timeSchema + `,"frame_locked":{"type":"boolean"},` +
	`"metadata":{"type":"array","items":{"type":"object","properties":{"key":{"type":"string"},"value":{"type":"string"}}}},` +
	`"cubes":{"type":"array","items":{"type":"object","properties":{` +
	`"pose":{"type":"object","properties":{"position":` + vec3Schema + `,"orientation":` + quatSchema + `}},` +
	`"size":` + vec3Schema + `,"color":{"type":"object","properties":{"r":{"type":"number"},"g":{"type":"number"},"b":{"type":"number"},"a":{"type":"number"}}}}}}` +
	`}}}}}`

// locationFixSchema is foxglove.LocationFix.
const locationFixSchema = `{"title":"foxglove.LocationFix","description":"A navigation satellite fix","type":"object","properties":{` +
	`"timestamp":` + timeSchema + `,"frame_id":{"type":"string"},"latitude":{"type":"number"},"longitude":{"type":"number"},"altitude":{"type":"number"},` +
	`"position_covariance":{"type":"array","items":{"type":"number"},"minItems":9,"maxItems":9},"position_covariance_type":{"type":"integer"}}}`

// logSchema is foxglove.Log.
const logSchema = `{"title":"foxglove.Log","description":"A log message","type":"object","properties":{` +
	`"timestamp":` + timeSchema + `,"level":{"type":"integer","description":"0 unknown, 1 debug, 2 info, 3 warning, 4 error, 5 fatal"},` +
	`"message":{"type":"string"},"name":{"type":"string"},"file":{"type":"string"},"line":{"type":"integer"}}}`

// telemetrySchema is skyloop.Telemetry: a vehicle's true state at a sample.
const telemetrySchema = `{"title":"skyloop.Telemetry","description":"A vehicle's true state at a sample time (vehicles.csv's columns)","type":"object","properties":{` +
	`"timestamp":` + timeSchema + `,"id":{"type":"integer"},"name":{"type":"string"},"position":` + vec3Schema + `,"velocity":` + vec3Schema + `,` +
	`"roll":{"type":"number"},"pitch":{"type":"number"},"yaw":{"type":"number"},"speed":{"type":"number"},"mode":{"type":"string"},"armed":{"type":"boolean"},` +
	`"landed":{"type":"boolean"},"energy_j":{"type":"number"},"distance_m":{"type":"number"},"battery_v":{"type":"number"},"current_a":{"type":"number"},` +
	`"battery_remaining":{"type":"number"}}}`

// networkEventSchema is skyloop.NetworkEvent: trace.csv's rows.
const networkEventSchema = `{"title":"skyloop.NetworkEvent","description":"A transmission, reception or drop (trace.csv's columns)","type":"object","properties":{` +
	`"timestamp":` + timeSchema + `,"event":{"type":"string","enum":["tx","rx","drop"]},"src":{"type":"integer"},"dst":{"type":"integer"},` +
	`"node":{"type":"integer","description":"tx: the destination (-1 broadcast); rx and drop: the receiver"},"seq":{"type":"integer"},` +
	`"t_gen_ns":{"type":"integer"},"bytes":{"type":"integer"},"kind":{"type":"string"},"reason":{"type":"string"},"rx_dbm":{"type":["number","null"]}}}`

// positionsSchema is skyloop.Positions: every vehicle's latest position in
// one message (the live server's TopicPositions, for the web view).
const positionsSchema = `{"title":"skyloop.Positions","description":"Every vehicle's latest position: p holds x, y, z (m, to the centimetre) of vehicle 0, then 1, ...; null for a vehicle not sampled yet","type":"object","properties":{` +
	`"timestamp":` + timeSchema + `,"p":{"type":"array","items":{"type":["number","null"]}}}}`

// networkBatchSchema is skyloop.NetworkBatch: the network events of one
// flush (the live server's TopicNetworkBatch, for the web view).
const networkBatchSchema = `{"title":"skyloop.NetworkBatch","description":"The network events since the last flush: counts of all of them (tx, rx, drop) and the first few as [t_s, type (0 tx, 1 rx, 2 drop), src, node, t_gen_s, state]","type":"object","properties":{` +
	`"timestamp":` + timeSchema + `,"counts":{"type":"array","items":{"type":"integer"},"minItems":3,"maxItems":3},` +
	`"events":{"type":"array","items":{"type":"array"}}}}`
