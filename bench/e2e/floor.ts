// bench:e2e's floor: one process doing the least the contract needs of an inbound message, in the
// order it needs it. smtp-server (the library the ingest is built on, same defaults) takes the
// message; the raw bytes go into a spool row, committed before the 250; then mailparser parses it
// (the options the rule engine uses, without its worker threads), one INSERT writes the email row,
// and one webhook POST carries it, signed as mailroom signs (HMAC-SHA256, `t=…,v1=…`), over a
// kept-alive connection. No SPF/DKIM/DMARC, no shield rules, no threads, no queues, no retries:
// what any implementation of the contract pays at least. mailroom's end-to-end rate and CPU per
// message are quoted against it.
// Run as its own process: `node --import tsx bench/e2e/floor.ts <port> <databaseUrl> <webhookUrl>`.
import { randomUUID } from "node:crypto";
import http from "node:http";
import { signatureHeader } from "@mailroom/core";
import { simpleParser } from "mailparser";
import pg from "pg";
import { bareSmtpServer } from "../lib/bare-smtp.ts";

const [portArg, databaseUrl, webhookUrl] = process.argv.slice(2);
if (!portArg || !databaseUrl || !webhookUrl) {
  console.error("usage: floor.ts <port> <databaseUrl> <webhookUrl>");
  process.exit(2);
}
const SECRET = "whsec_floor_bench_secret_0123456789";
const pool = new pg.Pool({ connectionString: databaseUrl, max: 20, application_name: "bench-floor" });
await pool.query(
  `CREATE TABLE IF NOT EXISTS floor_spool (id text PRIMARY KEY, mail_from text NOT NULL, rcpt text[] NOT NULL,
     raw bytea NOT NULL, received_at timestamptz NOT NULL DEFAULT now());
   CREATE TABLE IF NOT EXISTS floor_emails (id text PRIMARY KEY, spool_id text NOT NULL, message_id text,
     from_address text, subject text, text_body text, html_body text, recipient text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now())`,
);
const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
const target = new URL(webhookUrl);

function post(body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          "x-service-signature": signatureHeader([SECRET], body, Math.floor(Date.now() / 1000)),
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => ((res.statusCode ?? 0) < 300 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** After the 250: parse, the email row, the POST. */
async function deliver(spoolId: string, raw: Buffer, recipient: string): Promise<void> {
  const m = await simpleParser(raw, { skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
  const email = {
    id: randomUUID(),
    messageId: m.messageId ?? null,
    from: m.from?.value[0]?.address ?? null,
    subject: m.subject ?? "",
    text: m.text ?? "",
    html: typeof m.html === "string" ? m.html : "",
  };
  await pool.query(
    `INSERT INTO floor_emails (id, spool_id, message_id, from_address, subject, text_body, html_body, recipient)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [email.id, spoolId, email.messageId, email.from, email.subject, email.text, email.html, recipient],
  );
  await post(JSON.stringify({ id: randomUUID(), type: "email.received", data: { email } }));
}

bareSmtpServer("floor.bench.test", Number(portArg), async (raw, from, rcpt) => {
  const id = randomUUID();
  await pool.query("INSERT INTO floor_spool (id, mail_from, rcpt, raw) VALUES ($1, $2, $3, $4)", [id, from, rcpt, raw]);
  // Committed (one statement: its own transaction); the 250 goes out as this returns, the rest after.
  setImmediate(() => {
    for (const r of rcpt) void deliver(id, raw, r).catch((err: Error) => console.error(`floor: ${err.message}`));
  });
  return `queued as ${id}`;
});
