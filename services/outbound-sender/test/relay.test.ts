import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createRelay } from "../src/relay.ts";

/**
 * A relay that puts a NUL byte in its replies. smtp-server (the test relay of the other suites)
 * replaces control characters in what it sends, so this one speaks SMTP over a raw socket: any
 * server on the wire may answer like this, and the reply is recorded in Postgres, which refuses
 * U+0000. `refuse`: the RCPT answer is a 550 with a NUL; otherwise the DATA answer is a 250 with one.
 */
function startNulRelay(refuse: boolean): Promise<net.Server> {
  const server = net.createServer((socket) => {
    socket.write("220 nul.example ESMTP\r\n");
    let inData = false;
    let buf = "";
    socket.on("data", (chunk) => {
      buf += chunk.toString("latin1");
      for (let i = buf.indexOf("\r\n"); i >= 0; i = buf.indexOf("\r\n")) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (inData) {
          if (line !== ".") continue;
          inData = false;
          socket.write("250 2.0.0 queued\u0000as 1\r\n");
          continue;
        }
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === "EHLO") socket.write("250-nul.example\r\n250 8BITMIME\r\n");
        else if (verb === "RCPT") socket.write(refuse ? "550 5.1.1 No\u0000such user\r\n" : "250 2.1.5 ok\r\n");
        else if (verb === "DATA") {
          inData = true;
          socket.write("354 go on\r\n");
        } else if (verb === "QUIT") socket.end("221 bye\r\n");
        else socket.write("250 ok\r\n");
      }
    });
    socket.on("error", () => undefined);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const mail = { from: "a@sender.example", to: "b@nul.example", subject: "NUL", text: "x" };
const urlOf = (s: net.Server) => `smtp://127.0.0.1:${(s.address() as AddressInfo).port}`;

describe("relay replies carrying a NUL byte", () => {
  let refusing: net.Server;
  let accepting: net.Server;
  beforeAll(async () => {
    [refusing, accepting] = await Promise.all([startNulRelay(true), startNulRelay(false)]);
  });
  afterAll(async () => {
    await Promise.all([refusing, accepting].map((s) => new Promise((r) => s.close(r))));
  });

  it("a refusal is reported with U+FFFD in place of the NUL, still permanent, with its code", async () => {
    const relay = createRelay({ url: urlOf(refusing), timeoutMs: 30_000 });
    const r = await relay.send(mail);
    relay.close();
    expect(r).toMatchObject({ ok: false, permanent: true, code: 550 });
    expect(r.reply).toContain("No\uFFFDsuch user");
    expect(r.reply).not.toContain("\u0000");
  });

  it("an acceptance is reported with U+FFFD in place of the NUL", async () => {
    const relay = createRelay({ url: urlOf(accepting), timeoutMs: 30_000 });
    const r = await relay.send(mail);
    relay.close();
    expect(r).toMatchObject({ ok: true, code: 250 });
    expect(r.reply).toContain("queued\uFFFDas 1");
    expect(r.reply).not.toContain("\u0000");
  });
});
