// Reads an MCAP file with @mcap/core (a reader skyloop did not write) and
// prints, as JSON: the schemas (name, encoding), the channels (topic,
// schema name, message encoding), the message count per topic, the first
// message of each topic parsed as JSON, and the topics whose log times
// go back at least once. It then opens the file as Foxglove does, with
// McapIndexedReader (footer, summary, chunk indexes), and prints the
// message count per topic found through the index, the statistics
// record's total and per-channel counts (by topic) and the header's
// profile, or the error that reader gave (indexedError).
// Usage: node read.mjs FILE
import { readFileSync } from "node:fs";
import { McapIndexedReader, McapStreamReader } from "@mcap/core";

const data = readFileSync(process.argv[2]);
const reader = new McapStreamReader({ validateCrcs: true });
reader.append(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
const schemas = {};
const channels = {};
const counts = {};
const first = {};
const lastTime = {};
const unordered = new Set();
let header = null;
let footer = false;
let metadata = {};
for (let rec; (rec = reader.nextRecord()); ) {
  switch (rec.type) {
    case "Header":
      header = { profile: rec.profile, library: rec.library };
      break;
    case "Schema":
      schemas[rec.id] = { name: rec.name, encoding: rec.encoding, schema: JSON.parse(new TextDecoder().decode(rec.data)) };
      break;
    case "Channel":
      channels[rec.id] = { topic: rec.topic, schemaId: rec.schemaId, messageEncoding: rec.messageEncoding };
      break;
    case "Metadata":
      metadata[rec.name] = Object.fromEntries(rec.metadata);
      break;
    case "Message": {
      const topic = channels[rec.channelId].topic;
      counts[topic] = (counts[topic] ?? 0) + 1;
      const msg = JSON.parse(new TextDecoder().decode(rec.data));
      if (!(topic in first)) first[topic] = msg;
      if (topic in lastTime && rec.logTime < lastTime[topic]) unordered.add(topic);
      lastTime[topic] = rec.logTime;
      break;
    }
    case "Footer":
      footer = true;
      break;
  }
}
const out = { header, footer, metadata, unordered: [...unordered].sort(), counts, first, schemas: {}, channels: {} };
try {
  const readable = {
    size: async () => BigInt(data.byteLength),
    read: async (offset, size) => new Uint8Array(data.buffer, data.byteOffset + Number(offset), Number(size)),
  };
  const indexed = await McapIndexedReader.Initialize({ readable });
  const byTopic = {};
  for await (const m of indexed.readMessages()) {
    const topic = indexed.channelsById.get(m.channelId).topic;
    byTopic[topic] = (byTopic[topic] ?? 0) + 1;
  }
  const statCounts = {};
  for (const [id, n] of indexed.statistics?.channelMessageCounts ?? []) {
    statCounts[indexed.channelsById.get(id)?.topic ?? `unknown channel ${id}`] = Number(n);
  }
  out.indexed = {
    counts: byTopic,
    statistics: Number(indexed.statistics?.messageCount ?? -1),
    channelCounts: statCounts,
    profile: indexed.header?.profile ?? null,
  };
} catch (e) {
  out.indexedError = String(e?.message ?? e);
}
for (const [id, s] of Object.entries(schemas)) out.schemas[id] = { name: s.name, encoding: s.encoding, title: s.schema.title };
for (const [id, c] of Object.entries(channels)) out.channels[c.topic] = { schema: schemas[c.schemaId].name, encoding: c.messageEncoding };
process.stdout.write(JSON.stringify(out));
