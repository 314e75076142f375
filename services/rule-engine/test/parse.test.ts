import { afterAll, describe, expect, it } from "@jest/globals";
import { createParser } from "../src/parse.ts";

const msg = (headers: string, body: string) => Buffer.from(`${headers.trim().replace(/\n/g, "\r\n")}\r\n\r\n${body}`);

/** Hostile input never stalls other mail: limits and a deadline, each thread-isolated. */
describe("MIME parsing off the event loop", () => {
  const parser = createParser({ threads: 2, timeoutMs: 20_000 });
  afterAll(() => parser.close());

  it("parses an ordinary message in a worker thread", async () => {
    const r = await parser.parse(
      msg(
        `From: "Ann" <Ann@Example.com>\nTo: b@example.org, c@example.org\nSubject: =?ISO-8859-1?Q?Caf=E9?=\nMessage-ID: <m1@example.com>\nIn-Reply-To: <m0@example.com>\nReferences: <a@x> <m0@example.com>`,
        "Hi\r\n",
      ),
      "mx.test",
    );
    expect(r).toMatchObject({
      ok: true,
      email: {
        messageId: "<m1@example.com>",
        messageIdPresent: true,
        inReplyTo: "<m0@example.com>",
        references: ["<a@x>", "<m0@example.com>"],
        fromAddress: "ann@example.com",
        fromName: "Ann",
        toAddresses: ["b@example.org", "c@example.org"],
        subject: "Café",
        textBody: "Hi\n",
      },
    });
  });

  it("refuses more MIME parts than the limit", async () => {
    const parts = Array.from({ length: 1_100 }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`).join(
      "",
    );
    const r = await parser.parse(
      msg("From: a@x.com\nContent-Type: multipart/mixed; boundary=b", `${parts}--b--\r\n`),
      "mx.test",
    );
    expect(r).toEqual({ ok: false, reason: "too many MIME parts (limit 1000)" });
  });

  it("refuses nesting deeper than the limit", async () => {
    let body = "deep\r\n";
    for (let i = 120; i > 0; i--)
      body = `--b${i}\r\nContent-Type: multipart/mixed; boundary=b${i + 1}\r\n\r\n${body}--b${i}--\r\n`;
    const r = await parser.parse(msg("From: a@x.com\nContent-Type: multipart/mixed; boundary=b1", body), "mx.test");
    expect(r).toEqual({ ok: false, reason: "MIME nesting too deep (limit 100)" });
  });

  it("refuses a 1 MB header", async () => {
    const r = await parser.parse(msg(`From: a@x.com\nX-Big: ${"a".repeat(1_048_576)}`, "body\r\n"), "mx.test");
    expect(r).toEqual({ ok: false, reason: "header block too large (limit 102400 bytes)" });
  });

  it("gives up on a parse past its deadline, replaces the thread, and other mail is not held up", async () => {
    // html-to-text on deeply nested markup takes seconds (the limit that normally skips it is
    // lifted), well past this deadline however fast the machine is.
    const slow = createParser({ threads: 2, timeoutMs: 1_500, limits: { maxHtmlToTextBytes: 100_000_000 } });
    try {
      // Both threads started and warm first, so the ordinary parse below costs milliseconds against
      // the hostile one's 1.5 s deadline even on a busy machine (a cold thread start could not be).
      const warm = (n: number) => slow.parse(msg(`From: w${n}@x.com\nSubject: warm`, "ok\r\n"), "mx.test");
      expect(await Promise.all([warm(1), warm(2)])).toMatchObject([{ ok: true }, { ok: true }]);
      const html = `${"<div>".repeat(200_000)}x${"</div>".repeat(200_000)}`;
      const hostile = slow.parse(msg("From: a@x.com\nContent-Type: text/html", html), "mx.test");
      const ordinary = await slow.parse(msg("From: b@x.com\nSubject: fine", "ok\r\n"), "mx.test");
      expect(ordinary).toMatchObject({ ok: true, email: { subject: "fine" } });
      let settled = false;
      void hostile.then(() => {
        settled = true;
      });
      await Promise.resolve();
      expect(settled).toBe(false);
      expect(await hostile).toEqual({ ok: false, reason: "parsing exceeded 1500 ms" });
      // The thread was replaced: the pool still works.
      expect(await slow.parse(msg("From: c@x.com\nSubject: after", "ok\r\n"), "mx.test")).toMatchObject({ ok: true });
    } finally {
      await slow.close();
    }
  });

  it("pathological text for the link finder is parsed without link detection", async () => {
    const text = `${"xn--a.".repeat(50_000)}com ${"a".repeat(500_000)}.com\r\n`;
    const r = await parser.parse(msg("From: a@x.com\nSubject: links", text), "mx.test");
    expect(r).toMatchObject({ ok: true, email: { subject: "links" } });
  });

  it("a 25 MB attachment comes back in one exactly-sized buffer, transferred rather than copied", async () => {
    const size = 25 * 1024 * 1024;
    const content = Buffer.alloc(size, 7);
    const b64 = content.toString("base64").replace(/.{76}/g, "$&\r\n");
    const raw = msg(
      "From: a@x.com\nContent-Type: multipart/mixed; boundary=z",
      `--z\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n--z\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=big.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n--z--\r\n`,
    );
    const r = await parser.parse(raw, "mx.test");
    if (!r.ok) throw new Error(r.reason);
    const [att] = r.email.attachments;
    expect(att).toMatchObject({ filename: "big.bin", size, contentType: "application/octet-stream" });
    // Its own backing store, exactly its size: not a slice of a bigger buffer, not a pooled copy.
    expect(att!.content.byteLength).toBe(size);
    expect(att!.content.buffer.byteLength).toBe(size);
    expect(Buffer.from(att!.content.buffer).equals(content)).toBe(true);
  });
});
