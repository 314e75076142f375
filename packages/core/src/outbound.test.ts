import { createPublicKey, createSign, createVerify } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { createDkimKey, dkimSelectorFor, dkimTxtValue } from "./dkim.ts";
import { newMessageId, type ReplySource, replyRecipients, replyReferences, replySubject } from "./outbound.ts";

const inbound: ReplySource = {
  direction: "inbound",
  messageId: "<m3@a.example>",
  references: ["<m1@a.example>", "<m2@a.example>"],
  subject: "Hello",
  fromAddress: "alice@a.example",
  toAddresses: ["support@ours.example", "Carol@c.example"],
  ccAddresses: ["bob@b.example", "support@ours.example"],
  replyTo: [],
};

describe("reply headers", () => {
  it("prefixes Re: once", () => {
    expect(replySubject("Hello")).toBe("Re: Hello");
    expect(replySubject("Re: Hello")).toBe("Re: Hello");
    expect(replySubject("RE:Hello")).toBe("RE:Hello");
    expect(replySubject("Re[2]: Hello")).toBe("Re[2]: Hello");
    expect(replySubject("Regarding the plan")).toBe("Re: Regarding the plan");
  });

  it("References = parent's References + parent's Message-ID, deduplicated and bounded", () => {
    expect(replyReferences(inbound)).toEqual(["<m1@a.example>", "<m2@a.example>", "<m3@a.example>"]);
    expect(replyReferences({ messageId: "<m1@a.example>", references: ["<m1@a.example>"] })).toEqual([
      "<m1@a.example>",
    ]);
    const long = Array.from({ length: 30 }, (_, i) => `<r${i}@x>`);
    const refs = replyReferences({ messageId: "<last@x>", references: long });
    expect(refs).toHaveLength(20);
    expect(refs[0]).toBe("<r0@x>");
    expect(refs.at(-1)).toBe("<last@x>");
  });
});

describe("reply recipients", () => {
  it("answers the sender; replyAll adds To and Cc minus ourselves", () => {
    expect(replyRecipients(inbound, "support@ours.example", { replyAll: false, cc: [] })).toEqual({
      to: ["alice@a.example"],
      cc: [],
    });
    expect(
      replyRecipients(inbound, "Support@ours.example", { replyAll: true, cc: ["dave@d.example", "bob@b.example"] }),
    ).toEqual({
      to: ["alice@a.example", "carol@c.example"],
      cc: ["bob@b.example", "dave@d.example"],
    });
  });

  it("prefers Reply-To, and a follow-up to our own outbound message goes to its recipients", () => {
    expect(
      replyRecipients({ ...inbound, replyTo: ["list@l.example"] }, "support@ours.example", { replyAll: false, cc: [] })
        .to,
    ).toEqual(["list@l.example"]);
    const outbound = {
      ...inbound,
      direction: "outbound",
      fromAddress: "support@ours.example",
      toAddresses: ["alice@a.example"],
    };
    expect(replyRecipients(outbound, "support@ours.example", { replyAll: true, cc: [] })).toEqual({
      to: ["alice@a.example"],
      cc: ["bob@b.example"],
    });
  });

  it("Message-IDs are bracketed, unique and on the sending domain", () => {
    const a = newMessageId("ours.example");
    expect(a).toMatch(/^<[A-Za-z0-9_-]{24}@ours\.example>$/);
    expect(newMessageId("ours.example")).not.toBe(a);
  });
});

describe("DKIM keys", () => {
  it("creates an RSA key whose public half is the TXT record's p=", async () => {
    const key = await createDkimKey(dkimSelectorFor(["tok1", "tok2"]) as string);
    expect(key.selector).toBe("tok1");
    expect(key.privateKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const pub = createPublicKey({ key: Buffer.from(key.publicKey, "base64"), format: "der", type: "spki" });
    expect(pub.asymmetricKeyDetails?.modulusLength).toBe(2048);
    const sig = createSign("sha256").update("x").sign(key.privateKey);
    expect(createVerify("sha256").update("x").verify(pub, sig)).toBe(true);
    expect(dkimTxtValue(key.publicKey)).toBe(`v=DKIM1; k=rsa; p=${key.publicKey}`);
    expect(dkimSelectorFor([])).toBeNull();
  });
});
