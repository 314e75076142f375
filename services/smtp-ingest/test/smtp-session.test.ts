import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Ingest, type IngestEnv, ingestEnv } from "@mailroom/stack";
import {
  connect,
  haveSwaks,
  rawSession,
  type Seeded,
  seedAddress,
  seedDomain,
  send,
  sendOnce,
  simpleMessage,
  splitStored,
  swaks,
  waitFor,
} from "@mailroom/testing";

type Raw = Awaited<ReturnType<typeof rawSession>>;
/** Writes one command and returns the final line of its reply (the first `NNN ` line after it). */
async function reply(s: Raw, line: string): Promise<string> {
  const n = s.lines.length;
  s.write(line);
  return waitFor(async () => s.lines.slice(n).find((l) => /^\d{3} /.test(l)) ?? false, {
    what: `reply to ${line}`,
    timeoutMs: 90_000,
  });
}

/** The session around the transaction: EHLO, STARTTLS, shutdown, timeouts, the per-IP cap. */
describe("smtp-ingest session", () => {
  let t: IngestEnv;
  let plain: Ingest;
  let d: Seeded;
  let certDir: string;

  beforeAll(async () => {
    t = await ingestEnv();
    plain = await t.start({ maxMessageBytes: 1_000_000 });
    d = await seedDomain(t.prisma, "session.example");
    await seedAddress(t.prisma, d, "support");
    // A self-signed certificate made for this run.
    certDir = mkdtempSync(join(tmpdir(), "mailroom-tls-"));
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=mx.mailroom.test",
        "-keyout",
        join(certDir, "key.pem"),
        "-out",
        join(certDir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
  });
  afterAll(async () => {
    await t?.close();
    if (certDir) rmSync(certDir, { recursive: true, force: true });
  });

  const swaksIt = haveSwaks() ? it : it.skip;
  if (!haveSwaks())
    console.warn("swaks is not installed (bash scripts/install-mail-tools.sh swaks): swaks cases skipped");

  swaksIt(
    "EHLO advertises SIZE, 8BITMIME, SMTPUTF8, PIPELINING, ENHANCEDSTATUSCODES and no STARTTLS without a certificate",
    async () => {
      const r = await swaks([
        "--server",
        `127.0.0.1:${plain.port}`,
        "--quit-after",
        "EHLO",
        "--ehlo",
        "client.example",
      ]);
      const caps = r.transcript
        .split("\n")
        .filter((l) => /^<-\s+250[- ]/.test(l))
        .map((l) => l.replace(/^<-\s+250[- ]/, "").trim());
      expect(caps).toEqual(
        expect.arrayContaining(["SIZE 1000000", "8BITMIME", "SMTPUTF8", "PIPELINING", "ENHANCEDSTATUSCODES"]),
      );
      expect(caps).not.toContain("STARTTLS");
      expect(caps.some((c) => c.startsWith("AUTH"))).toBe(false);
    },
  );

  swaksIt("swaks delivers with PIPELINING and an 8-bit, SMTPUTF8 body", async () => {
    const r = await swaks([
      "--server",
      `127.0.0.1:${plain.port}`,
      "--pipeline",
      "--from",
      "ünïcode@sender.example",
      "--to",
      "support@session.example",
      "--header",
      "Subject: Grüße",
      "--body",
      "Größe: 8-bit body",
      "--ehlo",
      "client.example",
    ]);
    expect(r.transcript).toMatch(/<-\s+250 2\.0\.0 Ok: queued as spl_/);
    expect(r.code).toBe(0);
  });

  swaksIt("swaks sees 550 5.1.1 for an unknown recipient and 550 5.2.1 for an inactive one", async () => {
    await seedAddress(t.prisma, d, "disabled", { active: false });
    const unknown = await swaks([
      "--server",
      `127.0.0.1:${plain.port}`,
      "--to",
      "nobody@session.example",
      "--from",
      "a@sender.example",
    ]);
    expect(unknown.transcript).toMatch(/<\*\*\s+550 5\.1\.1 /);
    expect(unknown.code).not.toBe(0);
    const inactive = await swaks([
      "--server",
      `127.0.0.1:${plain.port}`,
      "--to",
      "disabled@session.example",
      "--from",
      "a@sender.example",
    ]);
    expect(inactive.transcript).toMatch(/<\*\*\s+550 5\.2\.1 /);
  });

  it("STARTTLS with SMTP_TLS_CERT/KEY: advertised, negotiated, and the message accepted over TLS", async () => {
    const tls = await t.start({
      tls: { cert: readFileSync(join(certDir, "cert.pem")), key: readFileSync(join(certDir, "key.pem")) },
    });
    const conn = await connect({ port: tls.port, tls: true });
    expect(conn.secure).toBe(true);
    const message = simpleMessage("a@sender.example", "support@session.example");
    const r = await send(conn, { from: "a@sender.example", to: ["support@session.example"] }, message);
    conn.quit();
    expect(r.response).toMatch(/^250 2\.0\.0 Ok: queued as spl_/);
    // The TLS session is on the spool row and in our Received header, which is followed by exactly
    // the client's bytes.
    const spoolId = /queued as (spl_\w+)/.exec(r.response)?.[1] ?? "";
    const row = await t.prisma.spooledMessage.findUniqueOrThrow({ where: { id: spoolId } });
    expect(row).toMatchObject({ remoteIp: "127.0.0.1", helo: "client.example" });
    expect(row.tlsProtocol).toMatch(/^TLSv1\.[23]$/);
    expect(row.tlsCipher).toMatch(/^[A-Z0-9_-]{8,}$/);
    const { received, client } = splitStored(row.raw ?? new Uint8Array(), row.size);
    expect(received).toMatch(/^Received: from client\.example \([^ ]+ \[127\.0\.0\.1\]\)\r\n/);
    expect(received).toContain(`\r\n\t(using ${row.tlsProtocol} with cipher ${row.tlsCipher})\r\n`);
    expect(received).toContain(`\r\n\tby mx.mailroom.test (mailroom) with ESMTPS id ${spoolId}\r\n`);
    expect(received).toMatch(
      /\r\n\tfor <support@session\.example>; \w{3}, \d{1,2} \w{3} \d{4} \d\d:\d\d:\d\d \+0000\r\n$/,
    );
    expect(client.toString("latin1")).toBe(message);
    if (haveSwaks()) {
      const s = await swaks([
        "--server",
        `127.0.0.1:${tls.port}`,
        "--tls",
        "--to",
        "support@session.example",
        "--from",
        "a@sender.example",
      ]);
      expect(s.transcript).toMatch(/STARTTLS/);
      expect(s.transcript).toMatch(/250 2\.0\.0 Ok: queued as spl_/);
    }
  });

  it("drain: a DATA in progress finishes with its 250, then 421 4.3.2; idle sessions get 421 at once; the listener closes", async () => {
    const ing = await t.start({ drainBudgetMs: 120_000 });
    const idle = await rawSession(ing.port);
    await idle.next(/^220 /);
    await reply(idle, "EHLO idle.example");
    const busy = await rawSession(ing.port);
    await busy.next(/^220 /);
    await reply(busy, "EHLO busy.example");
    expect(await reply(busy, "MAIL FROM:<a@sender.example>")).toMatch(/^250 /);
    expect(await reply(busy, "RCPT TO:<support@session.example>")).toMatch(/^250 /);
    // Between RCPT and DATA at the drain: the transaction is still finished.
    const between = await rawSession(ing.port);
    await between.next(/^220 /);
    await reply(between, "EHLO between.example");
    expect(await reply(between, "MAIL FROM:<b@sender.example>")).toMatch(/^250 /);
    expect(await reply(between, "RCPT TO:<support@session.example>")).toMatch(/^250 /);
    expect(await reply(busy, "DATA")).toMatch(/^354 /);
    busy.socket.write(
      "From: a@sender.example\r\nTo: support@session.example\r\nSubject: drained\r\n\r\nfirst half\r\n",
    );

    const drained = ing.server.drain();
    expect(await idle.next(/^421 /)).toMatch(/^421 4\.3\.2 /);
    await idle.closed;
    // The listener is closed: a load balancer's next connection goes elsewhere.
    await expect(rawSession(ing.port)).rejects.toMatchObject({ code: "ECONNREFUSED" });

    const n = busy.lines.length;
    busy.socket.write("second half\r\n.\r\n");
    const accepted = await waitFor(async () => busy.lines.slice(n).find((l) => /^\d{3} /.test(l)) ?? false, {
      what: "DATA reply",
      timeoutMs: 90_000,
    });
    expect(accepted).toMatch(/^250 2\.0\.0 Ok: queued as spl_/);
    expect(await busy.next(/^421 /)).toMatch(/^421 4\.3\.2 /);
    await busy.closed;
    expect(await reply(between, "DATA")).toMatch(/^354 /);
    expect(await reply(between, "Subject: between\r\n\r\nbody\r\n.")).toMatch(/^250 2\.0\.0 /);
    // Its transaction done, the session is told to go (a new MAIL would get the same 421).
    expect(await between.next(/^421 /)).toMatch(/^421 4\.3\.2 /);
    await between.closed;
    await drained;
    const spoolId = /queued as (\S+)/.exec(accepted)?.[1] ?? "";
    expect(await t.prisma.spooledMessage.count({ where: { id: spoolId } })).toBe(1);
  });

  it("drain: past its budget an open transaction is cut with 421 4.3.2", async () => {
    const ing = await t.start({ drainBudgetMs: 300 });
    const busy = await rawSession(ing.port);
    await busy.next(/^220 /);
    await reply(busy, "EHLO busy.example");
    await reply(busy, "MAIL FROM:<a@sender.example>");
    await reply(busy, "RCPT TO:<support@session.example>");
    expect(await reply(busy, "DATA")).toMatch(/^354 /);
    busy.socket.write("Subject: never finished\r\n\r\n");
    await ing.server.drain();
    expect(await busy.next(/^421 /)).toMatch(/^421 4\.3\.2 /);
    await busy.closed;
  });

  it("421 after the idle timeout", async () => {
    const ing = await t.start({ socketTimeoutMs: 300 });
    const s = await rawSession(ing.port);
    await s.next(/^220 /);
    s.write("EHLO client.example");
    await s.next(/^250 /);
    expect(await s.next(/^421 /)).toMatch(/^421 .*Timeout/i);
    await s.closed;
  });

  it("421 4.4.2 when a busy connection reaches its time limit", async () => {
    const ing = await t.start({ connectionTimeoutMs: 400 });
    const s = await rawSession(ing.port);
    await s.next(/^220 /);
    s.write("EHLO client.example");
    // Never idle: a NOOP every 50 ms, until the server ends the session.
    const keepBusy = setInterval(() => s.write("NOOP"), 50);
    try {
      expect(await s.next(/^421 /)).toMatch(/^421 4\.4\.2 /);
      await s.closed;
    } finally {
      clearInterval(keepBusy);
    }
  });

  it("421 4.7.0 for a connection over the per-IP cap; the others carry on", async () => {
    const ing = await t.start({ maxConnectionsPerIp: 2 });
    const a = await connect({ port: ing.port });
    const b = await connect({ port: ing.port });
    await expect(connect({ port: ing.port })).rejects.toMatchObject({ responseCode: 421 });
    const third = await rawSession(ing.port);
    expect(await third.next(/^\d{3} /)).toMatch(/^421 4\.7\.0 /);
    const r = await send(
      a,
      { from: "a@sender.example", to: ["support@session.example"] },
      simpleMessage("a@sender.example", "support@session.example"),
    );
    expect(r.response).toMatch(/^250 /);
    a.quit();
    b.quit();
    // Once they have gone, a new connection is welcome again.
    const again = await sendOnce(
      { port: ing.port },
      { from: "a@sender.example", to: ["support@session.example"] },
      simpleMessage("a@sender.example", "support@session.example"),
    );
    expect(again.ok).toBe(true);
  });
});
