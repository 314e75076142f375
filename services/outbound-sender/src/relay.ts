import nodemailer from "nodemailer";
import type Mail from "nodemailer/lib/mailer";

export type RelayResult =
  | { ok: true; reply: string; code: number | null }
  | {
      ok: false;
      reply: string;
      /** The SMTP reply code, null for connection errors and timeouts. */
      code: number | null;
      /** A 5xx reply: the relay will never take this message, so retrying is pointless. */
      permanent: boolean;
    };

/** Hands one message to the relay; never throws for the relay's answer, only reports it. */
export type Relay = { send(mail: Mail.Options): Promise<RelayResult>; close(): void };

type SmtpError = Error & { code?: string; responseCode?: number; response?: string };
type RejectedError = { recipient?: string; response?: string };

/** A nodemailer SMTP transport to `SMTP_RELAY_URL` (STARTTLS when the relay offers it). */
export function createRelay(opts: { url: string; timeoutMs?: number }): Relay {
  const timeout = opts.timeoutMs ?? 30_000;
  const transport = nodemailer.createTransport({
    url: opts.url,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  });
  return {
    async send(mail) {
      try {
        const info = await transport.sendMail(mail);
        const rejected = ((info as { rejectedErrors?: RejectedError[] }).rejectedErrors ?? [])
          .map((e) => `${e.recipient}: ${e.response}`)
          .join("; ");
        const reply = storable(String(info.response));
        return { ok: true, reply: rejected ? `${reply} (refused: ${rejected})` : reply, code: replyCode(reply) };
      } catch (err) {
        const e = err as SmtpError;
        const reply = storable((e.response ?? `${e.code ?? "ERROR"}: ${e.message}`).slice(0, 2000));
        const permanent = typeof e.responseCode === "number" && e.responseCode >= 500 && e.responseCode < 600;
        return { ok: false, reply, permanent, code: e.responseCode ?? null };
      }
    },
    close: () => transport.close(),
  };
}

/**
 * The relay's reply is recorded in Postgres, which cannot hold U+0000: a reply carrying one would
 * fail the record after the message was handed over, and the attempt would be made again.
 */
const storable = (reply: string): string => reply.replaceAll("\u0000", "\uFFFD");

const replyCode = (reply: string): number | null => {
  const m = /^(\d{3})/.exec(reply);
  return m ? Number(m[1]) : null;
};
