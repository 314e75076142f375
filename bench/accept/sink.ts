// The floors mailroom's ingest is compared with: a bare smtp-server (the library ingest is built on,
// same defaults) that makes each message durable before 250 and does nothing else.
//   fsync: writes the bytes to a new file and fsyncs it (what a spool directory costs);
//   pg:    INSERTs the raw bytes into Postgres in one transaction (what one durable row costs).
// Run as its own process: `node --import tsx bench/accept/sink.ts fsync|pg <port> <dir|databaseUrl>`.
import { randomBytes } from "node:crypto";
import { open } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { bareSmtpServer } from "../lib/bare-smtp.ts";

const [kind, portArg, target] = process.argv.slice(2);
if ((kind !== "fsync" && kind !== "pg") || !portArg || !target) {
  console.error("usage: sink.ts fsync|pg <port> <dir|databaseUrl>");
  process.exit(2);
}

let store: (raw: Buffer, from: string, to: string[]) => Promise<void>;
if (kind === "fsync") {
  store = async (raw) => {
    const f = await open(join(target, randomBytes(8).toString("hex")), "wx");
    try {
      await f.write(raw);
      await f.sync();
    } finally {
      await f.close();
    }
  };
} else {
  // As many connections as the heaviest load has SMTP sessions: the floor should not wait for a pool.
  const pool = new pg.Pool({ connectionString: target, max: 20 });
  await pool.query(
    `CREATE TABLE IF NOT EXISTS bench_sink (id bigserial PRIMARY KEY, mail_from text NOT NULL,
       rcpt text[] NOT NULL, raw bytea NOT NULL, received_at timestamptz NOT NULL DEFAULT now())`,
  );
  store = async (raw, from, to) => {
    const c = await pool.connect();
    try {
      await c.query("BEGIN");
      await c.query("INSERT INTO bench_sink (mail_from, rcpt, raw) VALUES ($1, $2, $3)", [from, to, raw]);
      await c.query("COMMIT");
    } finally {
      c.release();
    }
  };
}

bareSmtpServer("sink.bench.test", Number(portArg), async (raw, from, to) => {
  await store(raw, from, to);
  return undefined;
});
