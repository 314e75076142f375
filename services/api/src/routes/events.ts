import { AppError, invalid } from "@mailroom/core";
import { EVENT_TYPES } from "@mailroom/queues";
import type { Response } from "express";
import { z } from "zod";
import { type Route, route } from "../lib/route.ts";
import type { OpsContext } from "../ops/context.ts";

const EVENT_ID = /^\d{1,20}-\d{1,20}$/;
const PAGE = 100;

const eventsQuery = z
  .object({
    lastEventId: z
      .string()
      .regex(EVENT_ID, "must be an event id from this stream, such as 1767225600000-0")
      .optional()
      .describe("resume after this event id, for clients that cannot send the Last-Event-ID header"),
  })
  .strict();

const DESCRIPTION =
  "A server-sent event stream (text/event-stream) of the key's account: " +
  `${EVENT_TYPES.map((t) => `\`${t}\``).join(", ")}. Each event has \`id\` (resume point), \`event\` (the type) ` +
  "and `data`, a JSON object with `type`, `accountId`, `emailId` and `deliveryId` (email and delivery events), " +
  "`endpointId` (endpoint events; `failingSince` on `endpoint.failing`: deliveries to it wait for probe " +
  "attempts until one succeeds, `endpoint.recovered`) and `occurredAt`; read the objects themselves with " +
  "GET /emails/{id}, /deliveries/{id} or /endpoints/{id}. Reconnect with " +
  "the `Last-Event-ID` header (or `?lastEventId=`) to receive every event after that one, for events of " +
  "at least the last hour; without it the stream starts with new events. A `: heartbeat` comment is sent " +
  "every 15 s while idle. The stream ends when the key is revoked or the server shuts down (reconnect). " +
  "One request against the rate limit per connection.";

/**
 * GET /events. Each connection registers with this replica's event hub (one Redis subscription per
 * replica), then reads its account's Redis stream from its cursor whenever the hub signals an
 * event, a Redis reconnect or a heartbeat; reading from the cursor each time means an event is
 * never skipped or sent twice, whatever the timing of the signals.
 */
export const eventsRoutes: Route[] = [
  route({
    method: "GET",
    path: "/events",
    doc: {
      tag: "Events",
      summary: "Live events of your account (server-sent events), resumable with Last-Event-ID",
      description: DESCRIPTION,
      query: eventsQuery,
      responses: {
        200: {
          description: "An event stream that stays open",
          contentType: "text/event-stream",
          schema: z.string().describe("id: <event id>\\nevent: <type>\\ndata: <JSON>\\n\\n, repeated"),
        },
      },
      errors: {
        400: "Last-Event-ID is not an event id",
        503: "Live events are not available (Redis unreachable)",
      },
    },
    sends: "itself",
    handle: async (ctx, { req, res, account: accountId, query }) => {
      const hub = ctx.events;
      if (!hub) throw new AppError("unavailable", "Live events are not configured on this server");
      const header = req.header("last-event-id")?.trim();
      if (header !== undefined && header !== "" && !EVENT_ID.test(header)) {
        throw invalid("Last-Event-ID: must be an event id from this stream, such as 1767225600000-0");
      }
      const resumeFrom = header || query.lastEventId;
      if (req.method === "HEAD") {
        // express runs GET handlers for HEAD: answer the headers a GET would get, and no stream.
        res.status(200).setHeader("Content-Type", "text/event-stream; charset=utf-8");
        res.end();
        return;
      }
      const recheck = req.reauthenticate;
      if (!recheck) throw new AppError("unauthorized", "Not authenticated");
      await stream(ctx, hub, accountId, recheck, resumeFrom, res);
    },
  }),
];

/**
 * Writes the account's stream entries after the cursor to `res`, one pass at a time: a signal that
 * arrives during a pass makes it read once more instead of starting a second pass, so entries go
 * out in order and once.
 */
function entryPump(
  ctx: OpsContext,
  hub: NonNullable<OpsContext["events"]>,
  accountId: string,
  res: Response,
  closed: () => boolean,
) {
  let cursor = "0";
  let pumping = false;
  let again = false;
  return {
    from(id: string) {
      cursor = id;
    },
    async pump() {
      if (pumping) {
        again = true;
        return;
      }
      pumping = true;
      try {
        do {
          again = false;
          for (;;) {
            const entries = await hub.read(accountId, cursor, PAGE);
            for (const { id, event } of entries) {
              if (closed()) return;
              res.write(`id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
              cursor = id;
            }
            if (entries.length < PAGE) break;
          }
        } while (again && !closed());
      } catch (err) {
        // Redis away: the next signal (reconnect, heartbeat) reads again from the same cursor.
        ctx.logger.warn({ err: (err as Error).message, accountId }, "event stream read failed");
      } finally {
        pumping = false;
      }
    },
  };
}

function openEventStream(res: Response) {
  res.status(200);
  res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
  res.setHeader("Cache-Control", "no-cache, no-transform");
  res.setHeader("Connection", "keep-alive");
  // Reverse proxies (nginx) must pass events through as they come.
  res.setHeader("X-Accel-Buffering", "no");
  res.flushHeaders();
  res.write("retry: 3000\n: connected\n\n");
}

async function stream(
  ctx: OpsContext,
  hub: NonNullable<OpsContext["events"]>,
  accountId: string,
  recheck: () => Promise<string>,
  resumeFrom: string | undefined,
  res: Response,
) {
  let closed = false;
  let heartbeat: NodeJS.Timeout | undefined;
  let off: (() => void) | undefined;
  const entries = entryPump(ctx, hub, accountId, res, () => closed);
  entries.from(resumeFrom ?? "0");

  const end = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    off?.();
    res.end();
  };

  // Register before choosing the start, so nothing published from here on can be missed.
  off = await hub.listen(accountId, (s) => (s.kind === "closing" ? end() : void entries.pump()));
  res.on("close", end);
  if (resumeFrom === undefined) entries.from((await hub.lastId(accountId)) ?? "0");

  openEventStream(res);
  heartbeat = setInterval(() => {
    if (closed) return;
    res.write(": heartbeat\n\n");
    // A revoked key or an ended console session stops streaming within one heartbeat, as it would
    // stop any other request.
    recheck().then(
      (still) => (still === accountId ? void entries.pump() : end()),
      (err: unknown) => (err instanceof AppError ? end() : undefined),
    );
  }, hub.heartbeatMs);
  await entries.pump();
}
