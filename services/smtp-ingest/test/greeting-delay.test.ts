import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type IngestEnv, ingestEnv } from "@mailroom/stack";
import { loadIngestEnv } from "../src/env.ts";

/** The first complete reply on a socket that sent `line` right after connecting. */
function talkFirst(port: number, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(line));
    let buf = "";
    socket.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      const m = /^\d{3} [^\r\n]*\r\n/m.exec(buf);
      if (m) {
        socket.destroy();
        resolve(m[0].trim());
      }
    });
    socket.on("error", reject);
  });
}

/**
 * smtp-server's early-talker pause (100 ms before every banner) is a setting (issue 13):
 * SMTP_GREETING_DELAY_MS, passed to the connection hooks as policy.greetingDelayMs.
 */
describe("the pause before the banner", () => {
  let t: IngestEnv;
  beforeAll(async () => {
    t = await ingestEnv();
  });
  afterAll(async () => {
    await t?.close();
  });

  it("SMTP_GREETING_DELAY_MS: 100 by default, 0 allowed, negative refused", () => {
    const base = { DATABASE_URL: "postgresql://x@127.0.0.1/x", REDIS_URL: "redis://127.0.0.1:6379" };
    expect(loadIngestEnv(base).SMTP_GREETING_DELAY_MS).toBe(100);
    expect(loadIngestEnv({ ...base, SMTP_GREETING_DELAY_MS: "0" }).SMTP_GREETING_DELAY_MS).toBe(0);
    expect(() => loadIngestEnv({ ...base, SMTP_GREETING_DELAY_MS: "-1" })).toThrow(/SMTP_GREETING_DELAY_MS/);
  });

  it("a client that talks during the configured pause is refused before any banner", async () => {
    // A pause far longer than the test: the EHLO certainly arrives inside it.
    const ingest = await t.start({ policy: { greetingDelayMs: 600_000 } });
    expect(await talkFirst(ingest.port, "EHLO early.test\r\n")).toMatch(/^421 .*talk too soon/);
    await ingest.close();
  });
});
