// Connects to a Foxglove WebSocket server with @foxglove/ws-protocol's
// FoxgloveClient (a client skyloop did not write), subscribes to every
// channel it advertises, and prints as JSON, once it has `want` transforms
// and the scene (or after `timeout` ms): the server's name, the channels
// (topic -> schema name), the message count per topic, and the child
// frames of the transforms seen. Usage: node live.mjs URL want timeout
import wsProtocol from "@foxglove/ws-protocol";
import { WebSocket } from "ws";

const { FoxgloveClient } = wsProtocol;

const [url, wantArg, timeoutArg] = process.argv.slice(2);
const want = Number(wantArg ?? 4);
const client = new FoxgloveClient({ ws: new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
const channels = {};
const bySub = {};
const counts = {};
const frames = new Set();
let server = null;
let done = false;
const finish = (why) => {
  if (done) return;
  done = true;
  process.stdout.write(JSON.stringify({ why, server, channels, counts, frames: [...frames].sort() }));
  client.close();
  setTimeout(() => process.exit(0), 50);
};
client.on("serverInfo", (info) => { server = info.name; });
client.on("advertise", (chs) => {
  for (const ch of chs) {
    channels[ch.topic] = ch.schemaName;
    bySub[client.subscribe(ch.id)] = ch.topic;
  }
});
client.on("message", ({ subscriptionId, data }) => {
  const topic = bySub[subscriptionId];
  counts[topic] = (counts[topic] ?? 0) + 1;
  const msg = JSON.parse(new TextDecoder().decode(data));
  if (topic === "/tf") frames.add(msg.child_frame_id);
  if ((counts["/tf"] ?? 0) >= want && (counts["/scene"] ?? 0) >= 1 && frames.size >= Math.min(want, 4)) finish("enough");
});
client.on("error", (err) => { process.stderr.write(String(err) + "\n"); });
client.on("close", () => finish("closed"));
setTimeout(() => finish("timeout"), Number(timeoutArg ?? 15000));
