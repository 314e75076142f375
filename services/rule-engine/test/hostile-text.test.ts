import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { emailView } from "@mailroom/core";
import { newId, poolOf, readBytea } from "@mailroom/db";
import { type Seeded, seedAddress, seedDomain, seedEndpoint, splitStored, waitFor } from "@mailroom/testing";
import { type Pipeline, startPipeline } from "./pipeline.ts";

const b64 = (bytes: number[] | Buffer) => Buffer.from(bytes).toString("base64");
const FFFD = "\uFFFD";

/**
 * Valid 7-bit mail whose decoded text holds what Postgres cannot store (U+0000, lone surrogates)
 * used to get `250` and then fail its insert on every retry, for ever. Every such message is now
 * stored, cleaned field by field, and its raw bytes stay byte-identical. Also: folded headers are
 * unfolded (RFC 5322 §2.2.3) wherever a header value is stored.
 */
describe("decoded text Postgres cannot hold, and folded headers", () => {
  let p: Pipeline;
  let d: Seeded;
  let endpointId: string;

  beforeAll(async () => {
    p = await startPipeline();
    d = await seedDomain(p.prisma, "text.example");
    endpointId = await seedEndpoint(p.prisma, d.accountId, "http://127.0.0.1:9/hook");
    await seedAddress(p.prisma, d, "in", { endpointId });
  });
  afterAll(async () => {
    await p?.stop();
  });

  /** SMTP in; the stored email, its thread, its deliveries and the raw bytes it was stored from. */
  const store = async (head: string[], body: string[]) => {
    const raw = [
      ...(head.some((h) => h.startsWith("From:")) ? [] : ["From: Sender <sender@outside.example>"]),
      "To: in@text.example",
      `Message-ID: <${Math.random()}@outside.example>`,
      "Date: Mon, 23 Nov 2026 10:00:00 +0000",
      ...head,
      "",
      ...body,
      "",
    ].join("\r\n");
    const r = await p.sendRaw("sender@outside.example", ["in@text.example"], raw);
    expect(r.response).toMatch(/^250 /);
    const [rcpt] = await p.processed(r.spoolId!);
    expect(rcpt!.status).toBe("stored");
    const email = await p.prisma.email.findFirstOrThrow({
      where: { spoolId: r.spoolId! },
      include: { thread: true, deliveries: true, attachments: true },
    });
    // Nothing was lost: the raw message, as accepted, is still there byte for byte behind our Received header.
    const spooled = await readBytea(poolOf(p.prisma), { table: "spooled_messages", column: "raw" }, r.spoolId!);
    const { received, client } = splitStored(spooled!, Buffer.byteLength(raw));
    expect(received).toMatch(/^Received: from /);
    expect(client.equals(Buffer.from(raw))).toBe(true);
    expect(email.deliveries.map((x) => x.endpointId)).toEqual([endpointId]);
    return email;
  };

  it("NUL in an encoded-word subject (=?utf-8?B?YQBi?=) and in a display name", async () => {
    const e = await store(
      ["Subject: =?utf-8?B?YQBi?=", `Reply-To: "=?utf-8?B?${b64([0x62, 0, 0x63])}?=" <r@x.test>`],
      ["hello"],
    );
    expect(e.subject).toBe(`a${FFFD}b`);
    expect(e.thread.subject).toBe(`a${FFFD}b`);
    expect(e.sanitized).toEqual(["subject"]);
    expect(emailView(e, e.attachments, "http://api.test").sanitized).toEqual(["subject"]);

    const named = await store(
      [`From: "=?utf-8?B?${b64(Buffer.from("Ali\0ce"))}?=" <sender@outside.example>`, "Subject: name"],
      ["hello"],
    );
    expect(named.fromName).toBe(`Ali${FFFD}ce`);
    expect(named.sanitized).toEqual(["fromName"]);
  });

  it("quoted-printable =00 in text/html and base64 text/plain holding 0x00", async () => {
    const e = await store(
      ["Subject: bodies", "MIME-Version: 1.0", 'Content-Type: multipart/alternative; boundary="b"'],
      [
        "--b",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: base64",
        "",
        b64(Buffer.from("plain\0text")),
        "--b",
        "Content-Type: text/html; charset=utf-8",
        "Content-Transfer-Encoding: quoted-printable",
        "",
        "<p>html=00here</p>",
        "--b--",
      ],
    );
    expect(e.textBody).toContain(`plain${FFFD}text`);
    expect(e.htmlBody).toContain(`html${FFFD}here`);
    expect(e.textBody).not.toContain("\0");
    expect([...e.sanitized].sort()).toEqual(["htmlBody", "strippedText", "textBody"]);
  });

  it("UTF-16 and UTF-32 parts holding U+0000 and an unpaired surrogate", async () => {
    // "h", U+0000, a lone high surrogate (invalid UTF-16), "!"
    const utf16 = [0x68, 0, 0, 0, 0x00, 0xd8, 0x21, 0];
    const e = await store(
      ["Subject: wide", "MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="b"'],
      [
        "--b",
        "Content-Type: text/plain; charset=utf-16le",
        "Content-Transfer-Encoding: base64",
        "",
        b64(utf16),
        "--b",
        "Content-Type: text/plain; charset=utf-32be",
        "Content-Transfer-Encoding: base64",
        "",
        b64([0, 0, 0, 0x77, 0, 0, 0, 0, 0, 0, 0, 0x7a]),
        "--b--",
      ],
    );
    expect(e.textBody).toContain(`h${FFFD}${FFFD}!`);
    expect(e.textBody).toContain(`w${FFFD}z`);
    expect(e.sanitized).toEqual(["textBody", "strippedText"]);
  });

  it("an unpaired surrogate in a UTF-16 encoded-word subject (jsonb and text alike)", async () => {
    const e = await store([`Subject: =?utf-16le?B?${b64([0x61, 0, 0x00, 0xdc, 0x62, 0])}?=`], ["x"]);
    expect(e.subject).toBe(`a${FFFD}b`);
    expect(e.sanitized).toEqual(["subject"]);
  });

  it("NUL in an attachment filename and in a stored header value (the headers JSON)", async () => {
    const e = await store(
      ["Subject: files", "MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="b"'],
      [
        "--b",
        "Content-Type: text/plain",
        "",
        "see attached",
        "--b",
        "Content-Type: application/octet-stream",
        "Content-Disposition: attachment; filename*=utf-8''re%00port.pdf",
        "Content-Transfer-Encoding: base64",
        "",
        b64([0, 1, 2, 0]),
        "--b--",
      ],
    );
    expect(e.attachments).toHaveLength(1);
    expect(e.attachments[0]).toMatchObject({ filename: `re${FFFD}port.pdf`, size: 4, stored: true });
    // The bytes of an attachment are bytes: kept as they are, NULs included.
    expect(Buffer.from(e.attachments[0]!.content!).equals(Buffer.from([0, 1, 2, 0]))).toBe(true);
    expect(e.sanitized).toEqual(["attachments.filename"]);
  });

  it("a raw NUL byte in a header line: the headers JSON (jsonb refuses \\u0000) is cleaned", async () => {
    const e = await store(["Subject: raw", "X-Raw: a\0b"], ["x"]);
    const headers = e.headers as { key: string; value: string }[];
    expect(headers.find((h) => h.key === "x-raw")?.value).toBe(`a${FFFD}b`);
    expect(e.sanitized).toEqual(["headers.value"]);
  });

  it("a blocked message with NUL in its subject: the block record is written, cleaned", async () => {
    const other = await seedDomain(p.prisma, "blocked-text.example");
    await seedAddress(p.prisma, other, "in");
    const ruleId = newId("shieldRule");
    await p.prisma.shieldRule.create({
      data: {
        id: ruleId,
        accountId: other.accountId,
        name: "no blockme",
        action: "block",
        priority: 1,
        conditions: [{ field: "subject", operator: "contains", value: "blockme" }],
        endpointIds: [],
      },
    });
    const raw = `From: a@outside.example\r\nTo: in@blocked-text.example\r\nSubject: =?utf-8?B?${b64(Buffer.from("blockme\0now"))}?=\r\n\r\nx\r\n`;
    const r = await p.sendRaw("a@outside.example", ["in@blocked-text.example"], raw);
    expect(r.response).toMatch(/^250 /);
    // A blocked message keeps no body: its spool (and recipient row) is purged once the record is
    // written. The purge is the statement after the block record's: wait for it, not for `blocked`.
    await waitFor(async () => (await p.prisma.spooledMessage.count({ where: { id: r.spoolId! } })) === 0, {
      what: "the blocked message's spool purged",
      timeoutMs: 60_000,
    });
    expect(await p.prisma.spoolRecipient.count({ where: { spoolId: r.spoolId! } })).toBe(0);
    const block = await p.prisma.blockRecord.findFirstOrThrow({ where: { accountId: other.accountId } });
    expect(block).toMatchObject({ ruleId, subject: `blockme${FFFD}now` });
  });

  it("unfolds tab- and space-folded headers everywhere they are stored; adjacent encoded-words still join", async () => {
    const e = await store(
      [
        "Subject: good idea or\r\n\tbad?",
        'Reply-To: "Alice\r\n Smith" <alice@x.test>',
        "X-Folded: one\r\n two\r\n\tthree",
        "Cc: bob@x.test,\r\n\tcarol@x.test",
      ],
      ["x"],
    );
    expect(e.subject).toBe("good idea or bad?");
    expect(e.thread.subject).toBe("good idea or bad?");
    expect(e.ccAddresses).toEqual(["bob@x.test", "carol@x.test"]);
    const headers = e.headers as { key: string; value: string }[];
    const header = (k: string) => headers.find((h) => h.key === k)?.value;
    expect(header("subject")).toBe("good idea or bad?");
    expect(header("reply-to")).toBe('"Alice Smith" <alice@x.test>');
    expect(header("x-folded")).toBe("one two three");
    expect(header("cc")).toBe("bob@x.test, carol@x.test");
    for (const h of headers) expect(h.value).not.toMatch(/[\r\n]/);

    const named = await store(['From: "Alice\r\n\tSmith" <sender@outside.example>', "Subject: x"], ["x"]);
    expect(named.fromName).toBe("Alice Smith");

    // RFC 2047 §6.2: whitespace between two adjacent encoded-words is not displayed, even across a
    // fold; between an encoded-word and plain text it is.
    const words = await store(["Subject: =?utf-8?Q?caf=C3=A9?=\r\n\t=?utf-8?Q?_au_lait?=\r\n plain"], ["x"]);
    expect(words.subject).toBe("café au lait plain");
    expect(words.sanitized).toEqual([]);
  });
});
