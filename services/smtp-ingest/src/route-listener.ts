import type { Logger } from "@mailroom/log";
import pg from "pg";

/** The channel the `rcpt_route_notify` migration's triggers notify. */
export const ROUTES_CHANNEL = "mailroom_routes";
/** application_name of the listening connection (seen in pg_stat_activity). */
export const ROUTES_APPLICATION = "mailroom-rcpt-routes";

/** What the listener tells (route-cache.ts's RouteCache is one). */
export type RouteChanges = {
  listening(): void;
  lost(): void;
  invalidate(payload: string): void;
};

export type RouteListener = { close(): Promise<void> };

/**
 * One Postgres connection of its own that LISTENs on `mailroom_routes` and hands each payload on.
 * `listening()` comes once LISTEN has returned, so every change committed after it is notified; a
 * dropped connection (Postgres restarted, the backend terminated, the network) says `lost()` at once
 * and connects again after a pause that doubles up to `maxRetryMs`, then says `listening()` again.
 */
export function listenForRouteChanges(
  databaseUrl: string,
  changes: RouteChanges,
  logger: Logger,
  retry = { firstMs: 250, maxRetryMs: 10_000 },
): RouteListener {
  let closed = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let pauseMs = retry.firstMs;
  let wasUp = false;

  const dropped = (c: pg.Client, err?: Error) => {
    if (client !== c) return;
    client = undefined;
    changes.lost();
    c.end().catch(() => undefined);
    if (closed) return;
    if (wasUp)
      logger.warn({ err: err?.message }, "rcpt route notifications lost; reading routes from Postgres until back");
    wasUp = false;
    timer = setTimeout(connect, pauseMs);
    pauseMs = Math.min(pauseMs * 2, retry.maxRetryMs);
  };

  const connect = async () => {
    timer = undefined;
    if (closed) return;
    const c = routesClient(databaseUrl, changes, (err) => dropped(c, err));
    client = c;
    try {
      await c.connect();
      await c.query(`LISTEN ${ROUTES_CHANNEL}`);
    } catch (err) {
      return dropped(c, err as Error);
    }
    if (client !== c || closed) return;
    pauseMs = retry.firstMs;
    wasUp = true;
    changes.listening();
    logger.debug("rcpt route notifications listening");
  };

  void connect();
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = undefined;
      changes.lost();
      await c?.end().catch(() => undefined);
    },
  };
}

/** The listening connection: its notifications go to `changes`, its end or error to `dropped`. */
function routesClient(databaseUrl: string, changes: RouteChanges, dropped: (err?: Error) => void): pg.Client {
  // Keepalive probes from 10 s of silence: a connection that died without a word is noticed
  // (lost, then flushed on reconnect) rather than trusted; the TTL bounds the time until then.
  const c = new pg.Client({
    connectionString: databaseUrl,
    application_name: ROUTES_APPLICATION,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    connectionTimeoutMillis: 5_000,
  });
  c.on("error", (err) => dropped(err));
  c.on("end", () => dropped());
  c.on("notification", (m) => {
    if (m.channel === ROUTES_CHANNEL) changes.invalidate(m.payload ?? "");
  });
  return c;
}
