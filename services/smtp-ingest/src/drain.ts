import type { Logger } from "@mailroom/log";
import type { SMTPServer } from "smtp-server";
import { connectionsOf, type LiveConnection, pendingSockets } from "./smtp-internals.ts";

/** The reply every session gets once it has nothing left to finish (RFC 5321 §3.8: 421 may come at any time). */
export const SHUTTING_DOWN = "4.3.2 Service shutting down, try again later";

/** How often a draining server looks for sessions that have finished their transaction. */
const SWEEP_EVERY_MS = 100;

/**
 * In a mail transaction: MAIL accepted and the DATA reply not yet sent (smtp-server resets the
 * envelope right after it writes that reply), or the body still arriving.
 */
const inTransaction = (c: LiveConnection): boolean => !!c.session?.envelope?.mailFrom || !!c._dataStream;

/**
 * Drains an SMTP server instead of cutting it. The listener closes at once (a load balancer's
 * next connection goes to another replica), so do sockets that have no session yet (PROXY header,
 * TLS handshake). A session in a mail transaction finishes it, DATA included, and gets its 250;
 * every session without one (idle, or just after its 250) gets `421 4.3.2` and is closed. What is
 * still open after `budgetMs` is cut with the same 421. Resolves once every connection is gone.
 *
 * smtp-server's own close() is not used: from its first moment it answers every command, a DATA
 * between RCPT and the body included, with 421, and it cuts every session after its closeTimeout.
 */
export function drainSmtp(server: SMTPServer, budgetMs: number, logger: Logger): Promise<void> {
  const connections = connectionsOf(server);
  const listenerClosed = new Promise<void>((resolve) => server.server.close(() => resolve()));
  for (const socket of pendingSockets(server)) socket.destroy();
  logger.info({ sessions: connections.size, budgetMs }, "smtp draining: open transactions finish, then 421");
  return new Promise<void>((resolve) => {
    const finish = () => {
      clearInterval(sweeper);
      clearTimeout(deadline);
      resolve(listenerClosed);
    };
    const sweep = (cut: boolean) => {
      for (const c of [...connections]) {
        if (cut || !inTransaction(c)) refuse(c);
      }
      if (connections.size === 0) finish();
    };
    const sweeper = setInterval(() => sweep(false), SWEEP_EVERY_MS);
    const deadline = setTimeout(() => {
      const left = [...connections].filter(inTransaction).length;
      if (left) logger.warn({ sessions: left, budgetMs }, "smtp drain budget spent: cutting open transactions");
      sweep(true);
    }, budgetMs);
    sweep(false);
  });
}

/** `421 4.3.2` and close (smtp-server's send closes the connection after any 421). */
function refuse(c: LiveConnection): void {
  if (c._closing || c._closed) return;
  c.send(421, SHUTTING_DOWN);
  c.close();
}
