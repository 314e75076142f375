import { AppError } from "@mailroom/core";
import type { Prisma } from "@mailroom/db";
import { z } from "zod";
import { parse } from "../lib/http.ts";
import type { OpsContext } from "../ops/context.ts";
import { getEmail } from "../ops/emails.ts";

export const MAX_WAIT_SECONDS = 120;

const address = z
  .string({ error: "must be an email address" })
  .trim()
  .toLowerCase()
  .regex(/^[^\s@]+@[^\s@]+$/, "must be an email address");

export const waitForEmailInput = z
  .object({
    address: address
      .optional()
      .describe("the inbox address the mail was received at (a plus-tagged user+tag@ also matches user@)"),
    domain: z
      .string({ error: "must be a domain name" })
      .trim()
      .toLowerCase()
      .regex(/^[a-z0-9.-]+\.[a-z0-9-]+$/, "must be a domain name such as example.com")
      .optional()
      .describe("any inbox of this receiving domain"),
    from: z
      .string({ error: "must be an email address or @domain" })
      .trim()
      .toLowerCase()
      .regex(/^([^\s@]+@|@)[^\s@]+$/, "must be an email address or @domain")
      .optional()
      .describe("the sender: an exact address, or @example.com for any sender of that domain"),
    subjectContains: z
      .string({ error: "must be a string" })
      .min(1, "must not be empty")
      .max(200, "must be at most 200 characters")
      .optional()
      .describe("case-insensitive substring of the subject"),
    receivedAfter: z.iso
      .datetime({ offset: true, error: "must be an ISO 8601 timestamp" })
      .optional()
      .describe(
        "only mail received after this time, including mail already stored when the call starts. Without it, " +
          "only mail stored after the call starts is returned",
      ),
    timeoutSeconds: z
      .number({ error: "must be a number of seconds" })
      .int("must be a whole number of seconds")
      .min(1, "must be at least 1")
      .max(MAX_WAIT_SECONDS, `must be at most ${MAX_WAIT_SECONDS}`)
      .default(30)
      .describe(`how long to wait, 1 to ${MAX_WAIT_SECONDS} seconds (default 30)`),
  })
  .strict();

export type WaitInput = z.input<typeof waitForEmailInput>;

/** The filter as a Postgres condition: the one definition of "matches", for the first look and every event. */
function matchWhere(accountId: string, f: z.output<typeof waitForEmailInput>): Prisma.EmailWhereInput {
  const and: Prisma.EmailWhereInput[] = [{ accountId, direction: "inbound" }];
  if (f.address) {
    const at = f.address.lastIndexOf("@");
    const local = f.address.slice(0, at);
    const domain = f.address.slice(at + 1);
    and.push({
      OR: [{ recipient: f.address }, { recipient: { startsWith: `${local}+`, endsWith: `@${domain}` } }],
    });
  }
  if (f.domain) and.push({ recipient: { endsWith: `@${f.domain}` } });
  if (f.from) and.push(f.from.startsWith("@") ? { fromAddress: { endsWith: f.from } } : { fromAddress: f.from });
  if (f.subjectContains) and.push({ subject: { contains: f.subjectContains, mode: "insensitive" } });
  if (f.receivedAfter) and.push({ receivedAt: { gt: new Date(f.receivedAfter) } });
  return { AND: and };
}

export type WaitResult = { email: Awaited<ReturnType<typeof getEmail>> | null; timedOut: boolean };

type Outcome = ReturnType<typeof oneOutcome>;

/**
 * The wait's one outcome, whichever comes first: a match, the timeout, the caller's abort or an
 * error. Settling clears the timer and the abort listener and unregisters from the hub, so a
 * finished wait holds nothing.
 */
function oneOutcome(
  resolve: (r: WaitResult) => void,
  reject: (e: Error) => void,
  timeoutMs: number,
  signal: AbortSignal | undefined,
) {
  let settled = false;
  let off: (() => void) | undefined;
  const timer = setTimeout(() => finish({ email: null, timedOut: true }), timeoutMs);
  const onAbort = () => finish(new AppError("unavailable", "The wait was cancelled"));
  signal?.addEventListener("abort", onAbort, { once: true });

  function finish(out: WaitResult | Error) {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
    off?.();
    if (out instanceof Error) reject(out);
    else resolve(out);
  }
  return {
    finish,
    onAbort,
    get settled() {
      return settled;
    },
    /** The hub registration is in place: keep its unregister function. False when the wait already ended. */
    listening(unlisten: () => void): boolean {
      off = unlisten;
      if (settled) unlisten();
      return !settled;
    },
  };
}

/** One look in Postgres (by event id, or on the first look and a resync by time): the oldest match settles the wait. */
async function look(
  ctx: OpsContext,
  accountId: string,
  where: Prisma.EmailWhereInput,
  out: Outcome,
  extra: Prisma.EmailWhereInput,
) {
  if (out.settled) return;
  try {
    const hit = await ctx.prisma.email.findFirst({
      where: { AND: [where, extra] },
      orderBy: [{ receivedAt: "asc" }, { id: "asc" }],
      select: { id: true },
    });
    if (hit && !out.settled) out.finish({ email: await getEmail(ctx, accountId, hit.id), timedOut: false });
  } catch (err) {
    out.finish(err as Error);
  }
}

/**
 * Waits for the first email of `accountId` matching the filter. Race-free without polling: the
 * replica's listener is registered first, then Postgres is asked once for mail already there
 * (only with `receivedAfter`); from then on each `email.received` event of this account (ids only,
 * fanned out through Redis) is checked against the same condition by id. The oldest match wins
 * on the first look; afterwards the first event that matches.
 */
export async function waitForEmail(
  ctx: OpsContext,
  accountId: string,
  args: unknown,
  signal?: AbortSignal,
): Promise<WaitResult> {
  const f = parse(waitForEmailInput, args);
  const hub = ctx.events;
  if (!hub) throw new AppError("unavailable", "Live events are not configured on this server");
  const startedAt = new Date();
  const where = matchWhere(accountId, f);

  return new Promise<WaitResult>((resolve, reject) => {
    const out = oneOutcome(resolve, reject, f.timeoutSeconds * 1000, signal);
    const lookFor = (extra: Prisma.EmailWhereInput) => look(ctx, accountId, where, out, extra);
    hub
      .listen(accountId, (s) => {
        if (s.kind === "closing") {
          out.finish(new AppError("unavailable", "The server is shutting down; call wait_for_email again"));
        } else if (s.kind === "resync") {
          // Events may have been missed while Redis was away: look once for what was stored meanwhile.
          void lookFor(f.receivedAfter ? {} : { createdAt: { gte: startedAt } });
        } else if (s.event.type === "email.received") {
          void lookFor({ id: s.event.emailId });
        }
      })
      .then(
        (unlisten) => {
          if (!out.listening(unlisten)) return;
          if (signal?.aborted) return out.onAbort();
          // Listening first, then the one look for mail already there: nothing falls in between.
          if (f.receivedAfter) void lookFor({});
        },
        (err: Error) => out.finish(new AppError("unavailable", `Live events are unavailable: ${err.message}`)),
      );
  });
}
