import { randomBytes } from "node:crypto";
import type { Socket } from "node:net";
import type { Logger } from "@mailroom/log";
import type { SMTPServer } from "smtp-server";
import { trustedPeers } from "./cidr.ts";
import { parseProxyHeader } from "./proxy-protocol.ts";
import { installProxyHandler, type ProxiedSocket } from "./smtp-internals.ts";

/** smtp-server's session id format (16 base-32 digits), which its own PROXY reader would have made. */
const sessionId = () =>
  BigInt(`0x${randomBytes(10).toString("hex")}`)
    .toString(32)
    .padStart(16, "0");

/**
 * PROXY protocol v1 and v2 on every connection of `server` (smtp-server reads only v1, and treats a
 * peer outside its trust list as a direct client). A peer outside `trustedCidrs` is refused `554`
 * before anything else: with PROXY enabled, the only way in is through the proxies, or anyone could
 * connect directly and be counted and SPF-checked as the proxy. From a trusted peer the header is
 * required; the client address it carries becomes the session's remote address, so the per-address
 * and per-network caps, the stored `remoteIp` and SPF all see the real client. smtp-server's
 * pre-session guard still bounds how long a peer may take to send the header (socketTimeout).
 */
export function acceptProxyProtocol(server: SMTPServer, trustedCidrs: string[], logger: Logger): void {
  const trusted = trustedPeers(trustedCidrs);
  installProxyHandler(server, (socket, done) => {
    const peer = socket.remoteAddress ?? "";
    socket.on("error", () => undefined); // from here on, a reset peer is only a failed header
    if (!trusted(peer)) {
      logger.info({ peer }, "smtp connection refused: not from a trusted PROXY protocol peer");
      refuse(socket, "554 5.7.1 Connections are accepted only through the configured proxies\r\n");
      return done(new Error(`untrusted PROXY peer ${peer}`));
    }
    readHeader(socket, (err, session) => {
      if (err) {
        logger.warn({ peer, err: err.message }, "smtp connection dropped: bad PROXY protocol header");
        refuse(socket);
        return done(err);
      }
      done(null, session);
    });
  });
}

/** Says why (best effort) and closes; destroyed a moment later if the peer keeps its side open. */
function refuse(socket: Socket, reply?: string) {
  if (reply && socket.writable) socket.end(reply);
  else socket.destroy();
  setTimeout(() => socket.destroy(), 1000).unref();
}

function readHeader(socket: Socket, done: (err: Error | null, session?: ProxiedSocket) => void) {
  let buf = Buffer.alloc(0);
  let finished = false;
  const finish = (err: Error | null, session?: ProxiedSocket) => {
    if (finished) return;
    finished = true;
    socket.removeListener("readable", onReadable);
    socket.removeListener("end", onGone);
    socket.removeListener("close", onGone);
    done(err, session);
  };
  const onGone = () => finish(new Error("connection closed before its PROXY header"));
  function onReadable() {
    for (let chunk = socket.read() as Buffer | null; chunk !== null; chunk = socket.read() as Buffer | null) {
      buf = Buffer.concat([buf, chunk]);
      const h = parseProxyHeader(buf);
      if (h.kind === "more") continue;
      if (h.kind === "invalid") return finish(new Error(h.reason));
      // Whatever followed the header (a pipelining client's first command) belongs to SMTP.
      const rest = buf.subarray(h.length);
      if (rest.length) socket.unshift(rest);
      const client = h.source ? { remoteAddress: h.source.address, remotePort: h.source.port } : {};
      return finish(null, { id: sessionId(), ...client });
    }
  }
  socket.on("readable", onReadable);
  socket.on("end", onGone);
  socket.on("close", onGone);
}
