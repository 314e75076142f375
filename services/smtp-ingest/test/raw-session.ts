import net from "node:net";
import { expect } from "@jest/globals";

/** One SMTP session on a raw socket, one command and its complete reply at a time. */
export async function rawSession(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  let buf = "";
  const replies: string[] = [];
  const waiters: ((reply: string) => void)[] = [];
  socket.on("data", (d: Buffer) => {
    buf += d.toString("latin1");
    for (let m = /(^|\r\n)\d{3} [^\r\n]*\r\n/.exec(buf); m; m = /(^|\r\n)\d{3} [^\r\n]*\r\n/.exec(buf)) {
      const end = m.index + m[0].length;
      const reply = buf.slice(0, end).trim();
      buf = buf.slice(end);
      const w = waiters.shift();
      if (w) w(reply);
      else replies.push(reply);
    }
  });
  socket.on("error", () => undefined);
  const reply = () => new Promise<string>((r) => (replies.length ? r(replies.shift() as string) : waiters.push(r)));
  const cmd = (line: string) => {
    socket.write(line);
    return reply();
  };
  expect(await reply()).toMatch(/^220 /);
  expect(await cmd("EHLO raw.test\r\n")).toMatch(/^250/);
  return { cmd, close: () => socket.end("QUIT\r\n") };
}

export type RawSession = Awaited<ReturnType<typeof rawSession>>;
