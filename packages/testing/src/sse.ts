export type SseEvent = { id?: string; event?: string; data: string };

/**
 * A server-sent-event reader over fetch (undici, a real HTTP client): it parses the stream as the
 * EventSource algorithm does and records events and comments as they arrive.
 */
export type SseReader = {
  status: number;
  headers: Headers;
  events: SseEvent[];
  comments: string[];
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
};

export async function openSse(url: string, key: string, lastEventId?: string): Promise<SseReader> {
  return openSseWith(url, {
    authorization: `Bearer ${key}`,
    ...(lastEventId ? { "last-event-id": lastEventId } : {}),
  });
}

/** The same reader with any credentials (a console session cookie, or none at all). */
export async function openSseWith(url: string, headers: Record<string, string>): Promise<SseReader> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const read = async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buf = "";
    let current: Partial<SseEvent> & { data?: string } = {};
    try {
      for await (const chunk of res.body) {
        buf += decoder.decode(chunk as Uint8Array, { stream: true });
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          const line = buf.slice(0, nl).replace(/\r$/, "");
          buf = buf.slice(nl + 1);
          if (line === "") {
            if (current.data !== undefined) events.push(current as SseEvent);
            current = {};
          } else if (line.startsWith(":")) comments.push(line.slice(1).trim());
          else {
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "data") current.data = current.data === undefined ? value : `${current.data}\n${value}`;
            else if (field === "id") current.id = value;
            else if (field === "event") current.event = value;
          }
        }
      }
    } catch {
      /* aborted by close() */
    }
  };
  return {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    ended: read(),
    close: () => abort.abort(),
  };
}
