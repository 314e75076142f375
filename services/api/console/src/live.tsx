import { useEffect, useRef, useState } from "react";

/** How often the page asks again while the event stream is down for good (HTTP error, no Redis). */
const FALLBACK_POLL_MS = 10_000;

export type LiveState = "connecting" | "live" | "polling";

/**
 * Live updates over server-sent events: GET /console/api/events with the session cookie streams
 * this member's account's events (the same stream as /api/v1/events). `onEvent` runs for each event
 * of `types`, and once each time the stream (re)opens, so that anything between the page's first
 * load and the subscription, or during a reconnect, is caught up. When the server refuses the
 * stream the page falls back to asking again every 10 s. A burst of events costs at most one
 * request in flight and one after it: events arriving while `onEvent`'s promise runs are merged.
 */
export function useLive(types: readonly string[], onEvent: () => Promise<unknown>): LiveState {
  const latest = useRef(onEvent);
  latest.current = onEvent;
  const [state, setState] = useState<LiveState>("connecting");
  const key = types.join(",");
  useEffect(() => {
    const es = new EventSource("/console/api/events");
    let poll: ReturnType<typeof setInterval> | undefined;
    let running = false;
    let again = false;
    const fire = () => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      void latest
        .current()
        .catch(() => undefined)
        .finally(() => {
          running = false;
          if (again) {
            again = false;
            fire();
          }
        });
    };
    for (const t of key.split(",")) es.addEventListener(t, fire);
    es.onopen = () => {
      clearInterval(poll);
      poll = undefined;
      setState("live");
      fire();
    };
    es.onerror = () => {
      // CONNECTING: the browser retries by itself (retry: 3000). CLOSED: it gave up; poll instead.
      if (es.readyState !== EventSource.CLOSED) return setState("connecting");
      setState("polling");
      poll ??= setInterval(fire, FALLBACK_POLL_MS);
    };
    return () => {
      es.close();
      clearInterval(poll);
    };
  }, [key]);
  return state;
}

const LABEL: Record<LiveState, string> = {
  connecting: "Connecting…",
  live: "Live",
  polling: "Checking every 10 s",
};

/** A small status next to a page title: whether new items arrive by themselves right now. */
export const LiveBadge = ({ state }: { state: LiveState }) => (
  <span className={`badge live-${state}`} role="status" data-testid="live" data-state={state}>
    {LABEL[state]}
  </span>
);
