import net from "node:net";

/** A raw SMTP client socket bound to a chosen loopback source address (all of 127/8 is local on Linux). */
export type RawClient = {
  socket: net.Socket;
  lines: string[];
  write(text: string): void;
  /** The first reply line (seen so far or to come) matching `match`. */
  next(match: RegExp): Promise<string>;
  /** The next final reply line (`NNN text`) after the one the previous call returned: one command at a time. */
  reply(): Promise<string>;
  closed: Promise<void>;
  isClosed(): boolean;
};

export function rawClient(port: number, localAddress = "127.0.0.1"): RawClient {
  const socket = net.connect({ port, host: "127.0.0.1", localAddress });
  const lines: string[] = [];
  const waiters: { match: (line: string, index: number) => boolean; resolve: (l: string) => void }[] = [];
  let replied = 0; // lines before this index were returned by reply() or skipped by it
  let buf = "";
  let isClosed = false;
  const closed = new Promise<void>((r) =>
    socket.once("close", () => {
      isClosed = true;
      r();
    }),
  );
  socket.on("error", () => undefined);
  socket.on("data", (d) => {
    buf += d.toString("latin1");
    for (let i = buf.indexOf("\r\n"); i >= 0; i = buf.indexOf("\r\n")) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 2);
      lines.push(line);
      for (const w of [...waiters]) {
        if (!w.match(line, lines.length - 1)) continue;
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const first = (match: (line: string, index: number) => boolean) =>
    new Promise<string>((resolve) => {
      const seen = lines.findIndex(match);
      if (seen >= 0) return resolve(lines[seen] as string);
      waiters.push({ match, resolve });
    });
  return {
    socket,
    lines,
    closed,
    isClosed: () => isClosed,
    write: (text) => {
      if (!socket.destroyed) socket.write(text);
    },
    next: (match) => first((l) => match.test(l)),
    reply: () => {
      let at = 0;
      const final = (l: string, i: number) => {
        if (i < replied || !/^\d{3} /.test(l)) return false;
        at = i;
        return true;
      };
      return first(final).then((l) => {
        replied = at + 1;
        return l;
      });
    },
  };
}

/**
 * A slowloris client: once greeted it sends `text` one byte every `everyMs`, over and over,
 * which keeps resetting an idle timeout while hardly ever finishing a command.
 */
export function trickle(client: RawClient, text: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => client.write(text[i++ % text.length]!), everyMs);
  void client.closed.then(() => clearInterval(timer));
}

/** Source addresses like the attack in issue 12: `hosts` addresses, each in its own /24. */
export const attackAddress = (host: number) => `127.0.${10 + host}.1`;
