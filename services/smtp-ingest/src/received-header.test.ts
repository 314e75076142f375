import { describe, expect, it } from "@jest/globals";
import { addressLiteral, type ReceivedFacts, receivedHeader, rfc5322Date } from "./received-header.ts";

const facts: ReceivedFacts = {
  helo: "client.example",
  reverseName: "mail.client.example",
  clientIp: "192.0.2.7",
  by: "mx.mailroom.test",
  esmtp: true,
  tls: null,
  spoolId: "spl_abc",
  recipients: ["user@example.com"],
  at: new Date("2024-11-26T10:00:00.123Z"),
};

const text = (f: Partial<ReceivedFacts>) => receivedHeader({ ...facts, ...f }).toString("latin1");

describe("Received header", () => {
  it("is Postfix's shape: from HELO (reverse name [address]), by us with protocol and id, for the one recipient; date", () => {
    expect(text({})).toBe(
      "Received: from client.example (mail.client.example [192.0.2.7])\r\n" +
        "\tby mx.mailroom.test (mailroom) with ESMTP id spl_abc\r\n" +
        "\tfor <user@example.com>; Tue, 26 Nov 2024 10:00:00 +0000\r\n",
    );
  });

  it("names the TLS version and cipher and says ESMTPS (RFC 3848) on a STARTTLS session", () => {
    const h = text({ tls: { protocol: "TLSv1.3", cipher: "TLS_AES_256_GCM_SHA384" } });
    expect(h).toContain("\r\n\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384)\r\n");
    expect(h).toContain(" with ESMTPS id spl_abc\r\n");
    expect(text({ esmtp: false })).toContain(" with SMTP id ");
  });

  it("names no recipient when there are several, and `unknown` when there is no reverse name", () => {
    const h = text({ recipients: ["a@example.com", "b@example.com"], reverseName: null });
    expect(h).toContain("from client.example (unknown [192.0.2.7])");
    expect(h).not.toContain("a@example.com");
    expect(h.endsWith("\t; Tue, 26 Nov 2024 10:00:00 +0000\r\n")).toBe(true);
  });

  it("cannot be broken by what the client sent: bytes outside visible ASCII (spaces too) become ?, and it is cut to 255", () => {
    const h = text({ helo: `evil\u00e9 x\ty${"a".repeat(400)}` });
    const line = h.split("\r\n")[0] as string;
    expect(line.startsWith("Received: from evil??x?yaaa")).toBe(true);
    expect(line).toBe(`Received: from evil??x?y${"a".repeat(255 - 9)} (mail.client.example [192.0.2.7])`);
    expect(h.split("\r\n").every((l) => l.length <= 998)).toBe(true);
  });

  it("writes address literals as RFC 5321 does", () => {
    expect(addressLiteral("2001:db8::7")).toBe("IPv6:2001:db8::7");
    expect(addressLiteral("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(text({ clientIp: "2001:db8::7", reverseName: null })).toContain("(unknown [IPv6:2001:db8::7])");
  });

  it("dates in RFC 5322 form, UTC", () => {
    expect(rfc5322Date(new Date("2026-01-05T03:04:05Z"))).toBe("Mon, 5 Jan 2026 03:04:05 +0000");
  });
});
