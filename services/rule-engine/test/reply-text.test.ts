import { readdirSync, readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "@jest/globals";
import { createParser } from "../src/parse.ts";

/**
 * Replies shaped as Gmail, Outlook, Apple Mail and Thunderbird send them (test/replies/*.eml: MIME
 * structure, charsets, quoted-printable and format=flowed as those clients write them), through the
 * real parse worker: strippedText is what the sender wrote, in English, German, French and Spanish.
 */
const REPLIES = new URL("./replies/", import.meta.url);

const expected: Record<string, string> = {
  "gmail-en.eml": "Thanks, Tuesday works for me.\n\nAna",
  "gmail-en-wrapped.eml": "Thanks, Tuesday works for me.",
  "gmail-de.eml": "Danke, Dienstag passt.\n\nGrüße\nAna",
  "gmail-fr.eml": "Merci, mardi me convient.",
  "gmail-es.eml": "Gracias, el martes me va bien.",
  "gmail-html-only.eml": "Sure, Tuesday it is.",
  "outlook-en.eml": "Sounds good, see you then.",
  "outlook-de.eml": "Passt, bis dann.\n\nMit freundlichen Grüßen\nAna Lopez",
  "outlook-fr.eml": "Parfait, à mardi.",
  "outlook-es.eml": "Perfecto, nos vemos.",
  "outlook-original-message.eml": "Approved.",
  "apple-iphone-en.eml": "Works for me.",
  "apple-iphone-de.eml": "Passt mir.",
  "apple-mac-fr.eml": "Ça me va.\n\nAna",
  "apple-mac-es.eml": "Vale, nos vemos.",
  "thunderbird-en.eml": "Fine by me. I will bring the figures we discussed last week, and the draft of the report.",
  "thunderbird-de.eml": "Einverstanden.",
  "thunderbird-fr.eml": "D'accord.",
  "thunderbird-es.eml": "De acuerdo.",
  "thunderbird-bottom-posted.eml": "Yes, Tuesday at ten.",
  // Answers between quotes keep the quotes: without them "Sure." answers nothing.
  "thunderbird-inline.eml":
    "On 23/11/2026 10:15, Bob Smith wrote:\n> Can we meet Tuesday?\n\nYes, at ten.\n\n> And could you bring the report?\n\nSure.",
};

describe("strippedText of real client replies", () => {
  const parser = createParser({ threads: 2, timeoutMs: 30_000 });
  afterAll(() => parser.close());

  it("has an expectation for every fixture", () => {
    expect(readdirSync(REPLIES).sort()).toEqual(Object.keys(expected).sort());
  });

  it.each(Object.entries(expected))("%s", async (file, stripped) => {
    const r = await parser.parse(readFileSync(new URL(file, REPLIES)), "mx.test");
    if (!r.ok) throw new Error(r.reason);
    expect(r.email.strippedText).toBe(stripped);
    // The full text is still there, history included.
    expect(r.email.textBody.length).toBeGreaterThan(stripped.length);
  });
});
