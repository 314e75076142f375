// A bare smtp-server (the library the ingest is built on, same defaults) for the benches' baselines:
// every message is read whole, handed to `store`, and answered 250 once it resolves (451 if it throws).
import { SMTPServer } from "smtp-server";

export type Stored = (raw: Buffer, from: string, to: string[]) => Promise<string | undefined>;

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Listens on 127.0.0.1:`port`; SIGTERM closes it and exits. `store` may return the 250's text. */
export function bareSmtpServer(name: string, port: number, store: Stored): SMTPServer {
  const server = new SMTPServer({
    name,
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    hideSTARTTLS: true,
    size: 40_000_000,
    logger: false,
    onData(stream, session, cb) {
      collect(stream)
        .then((raw) =>
          store(
            raw,
            session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            session.envelope.rcptTo.map((r) => r.address),
          ),
        )
        .then(
          (reply) => cb(null, reply ?? "queued"),
          (err: Error) => cb(err),
        );
    },
  });
  server.listen(port, "127.0.0.1");
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
  return server;
}
