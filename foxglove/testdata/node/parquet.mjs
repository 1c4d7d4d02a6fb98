// Reads Parquet files with hyparquet (a reader skyloop did not write) and
// prints, as JSON, per file: the column names, the row count, and the first
// and last rows (BigInts as strings). Usage: node parquet.mjs FILE...
import { readFileSync } from "node:fs";
import { parquetReadObjects, parquetMetadata, parquetSchema } from "hyparquet";

const out = {};
for (const file of process.argv.slice(2)) {
  const buf = readFileSync(file);
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  const meta = parquetMetadata(ab);
  const columns = parquetSchema(meta).children.map((c) => c.element.name);
  const rows = await parquetReadObjects({ file: ab });
  const plain = (r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : v]));
  out[file] = { columns, rows: rows.length, metaRows: Number(meta.num_rows), first: plain(rows[0] ?? {}), last: plain(rows[rows.length - 1] ?? {}) };
}
process.stdout.write(JSON.stringify(out));
