import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

export type RelayedMessage = { mailFrom: string; rcptTo: string[]; raw: Buffer };

/** A real SMTP relay on 127.0.0.1 that keeps what it accepts. */
export type TestRelay = {
  url: string;
  messages: RelayedMessage[];
  /** Every RCPT TO the relay saw (accepted or refused), in order. */
  rcptSeen: string[];
  close(): Promise<void>;
};

/**
 * Recipients whose local part starts with `tempfail` are refused with 451, `permfail` with 550;
 * everything else is accepted and recorded.
 */
export async function startRelay(): Promise<TestRelay> {
  const messages: RelayedMessage[] = [];
  const rcptSeen: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(address, _session, cb) {
      rcptSeen.push(address.address);
      const err = (code: number, text: string) => Object.assign(new Error(text), { responseCode: code });
      if (address.address.startsWith("tempfail")) return cb(err(451, "4.3.0 Try again later"));
      if (address.address.startsWith("permfail")) return cb(err(550, "5.1.1 No such user"));
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        messages.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
        });
        cb(null, "2.0.0 Ok: relayed");
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    rcptSeen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
