import nodemailer from "nodemailer";
import type Mail from "nodemailer/lib/mailer";

export type RelayResult =
  | { ok: true; reply: string }
  | {
      ok: false;
      reply: string;
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
        return { ok: true, reply: rejected ? `${info.response} (refused: ${rejected})` : String(info.response) };
      } catch (err) {
        const e = err as SmtpError;
        const reply = (e.response ?? `${e.code ?? "ERROR"}: ${e.message}`).slice(0, 2000);
        const permanent = typeof e.responseCode === "number" && e.responseCode >= 500 && e.responseCode < 600;
        return { ok: false, reply, permanent };
      }
    },
    close: () => transport.close(),
  };
}
