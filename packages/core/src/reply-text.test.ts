import { describe, expect, it } from "@jest/globals";
import { stripReply } from "./reply-text.ts";

describe("stripReply", () => {
  it("leaves text without history or signature alone (a > inside a line is not a quote)", () => {
    expect(stripReply("No quotes here.\nJust 3 > 2.\n")).toBe("No quotes here.\nJust 3 > 2.");
  });

  it("reads CRLF and bare CR line ends", () => {
    expect(stripReply("Yes.\r\n\r\nOn Mon, Bob <b@x.test> wrote:\r\n> Q?\r\n")).toBe("Yes.");
    expect(stripReply("Yes.\r\rOn Mon, Bob <b@x.test> wrote:\r> Q?\r")).toBe("Yes.");
  });

  it("is empty when the message is only history", () => {
    expect(stripReply("> Q?\n> more\n")).toBe("");
    expect(stripReply("---------- Forwarded message ---------\nFrom: Bob <b@x.test>\nDate: Mon\n\nHi")).toBe("");
  });

  it("keeps a forward's note and drops the forwarded message (several languages)", () => {
    for (const marker of [
      "---------- Forwarded message ---------",
      "-------- Weitergeleitete Nachricht --------",
      "-------- Message transféré --------",
      "---------- Mensaje reenviado ---------",
      "Begin forwarded message:",
    ]) {
      expect(stripReply(`FYI, see below.\n\n${marker}\nFrom: Bob <b@x.test>\nSubject: Q\n\nBody`)).toBe(
        "FYI, see below.",
      );
    }
  });

  it("needs a quote after an attribution: prose ending in a colon stays", () => {
    const text = "As Bob wrote:\nthe numbers are fine.\n";
    expect(stripReply(text)).toBe(text.trimEnd());
  });

  it("does not take a paragraph's last line for the first half of the attribution below it", () => {
    expect(stripReply("I agree.\nOn balance, yes.\nOn Mon, 23 Nov 2026, Bob <b@x.test> wrote:\n> Q?")).toBe(
      "I agree.\nOn balance, yes.",
    );
  });

  it("joins an attribution wrapped over three lines", () => {
    expect(stripReply("Ok.\n\nOn Mon, 23 Nov 2026 at 10:15,\nRobert Smith-Jones <\nbob@x.test> wrote:\n\n> Q?")).toBe(
      "Ok.",
    );
  });

  it("an Outlook From: line without Sent:/Date: below it is text", () => {
    const text = "From: the accounts team\nWe moved the meeting.";
    expect(stripReply(text)).toBe(text);
  });

  it("cuts at the first RFC 3676 signature line, and at a bare -- only near the end", () => {
    expect(stripReply("Hi\n-- \nAna\n")).toBe("Hi");
    expect(stripReply("Hi\n--\nAna\n")).toBe("Hi");
    const ruled = `Table\n--\n${"row\n".repeat(20)}`;
    expect(stripReply(ruled)).toBe(ruled.trimEnd());
  });

  it("drops a trailing mobile signature only when it is the last line", () => {
    expect(stripReply("Ok.\n\nEnviado desde mi iPhone\n")).toBe("Ok.");
    expect(stripReply("Ok.\n\nEnvoyé de mon iPad")).toBe("Ok.");
    expect(stripReply("Sent from my iPhone, I know.\nMore text.")).toBe("Sent from my iPhone, I know.\nMore text.");
  });

  it("stays linear on hostile input (lines that backtracking regexes choke on)", () => {
    // email-reply-parser's /^(.+\son.*at.*wrote:)$/ needs seconds for 8 KB of this; 1 MB here.
    const hostile = `hi\n${" on at".repeat(170_000)} wrote:\n> x\n`;
    expect(stripReply(hostile)).toBe(hostile.split("\n").slice(0, 2).join("\n").trimEnd());
    const openers = `${"On x\n".repeat(200_000)}> x\n`;
    expect(stripReply(openers).length).toBeGreaterThan(0);
  });
});
