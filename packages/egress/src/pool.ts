import http from "node:http";
import https from "node:https";

export type Agents = { http: http.Agent; https: https.Agent };

/**
 * Keep-alive connections for deliveries, one agent pair per (scheme, host, port, checked addresses).
 *
 * The SSRF guard still resolves and checks the host at every delivery; the agents are looked up by
 * the addresses that check returned, and their sockets only ever connect to those addresses. A host
 * whose DNS answer changes (rebinding) gets a different key, so a pooled socket opened to an address
 * checked earlier is never used for an answer checked now. Agents unused for `idleMs` are destroyed
 * (with their idle sockets) — shorter than common server keep-alive timeouts (Node's is 5 s), so that
 * a socket the server is about to close is rarely reused.
 */
export type ConnectionPool = {
  /** The agents for a request to `url` whose host was checked to `addresses`. */
  agentsFor(url: URL, addresses: readonly string[]): Agents;
  /** A request is done with the agents (idle time counts from the last release). */
  release(url: URL, addresses: readonly string[]): void;
  readonly size: number;
  close(): void;
};

type Entry = { agents: Agents; inUse: number; lastUsed: number };

export function createConnectionPool(opts: { idleMs?: number; maxAgents?: number } = {}): ConnectionPool {
  const idleMs = opts.idleMs ?? 2_000;
  const maxAgents = opts.maxAgents ?? 512;
  const entries = new Map<string, Entry>(); // insertion order = recency order
  const keyOf = (url: URL, addresses: readonly string[]) =>
    `${url.protocol}//${url.hostname}:${url.port}|${[...addresses].sort().join(",")}`;
  const destroy = (key: string, e: Entry) => {
    entries.delete(key);
    e.agents.http.destroy();
    e.agents.https.destroy();
  };
  const sweep = () => {
    const cutoff = Date.now() - idleMs;
    for (const [key, e] of entries) if (e.inUse === 0 && e.lastUsed < cutoff) destroy(key, e);
  };
  const timer = setInterval(sweep, Math.max(100, idleMs / 2));
  timer.unref();

  return {
    agentsFor(url, addresses) {
      const key = keyOf(url, addresses);
      let e = entries.get(key);
      if (e) entries.delete(key);
      else {
        // LIFO keeps the fewest sockets warm: the most recently used one is reused first.
        const o = { keepAlive: true, scheduling: "lifo" as const };
        e = { agents: { http: new http.Agent(o), https: new https.Agent(o) }, inUse: 0, lastUsed: Date.now() };
      }
      entries.set(key, e);
      e.inUse++;
      if (entries.size > maxAgents) {
        for (const [k, old] of entries) {
          if (entries.size <= maxAgents) break;
          if (old.inUse === 0) destroy(k, old);
        }
      }
      return e.agents;
    },
    release(url, addresses) {
      const e = entries.get(keyOf(url, addresses));
      if (!e) return;
      e.inUse = Math.max(0, e.inUse - 1);
      e.lastUsed = Date.now();
    },
    get size() {
      return entries.size;
    },
    close() {
      clearInterval(timer);
      for (const [key, e] of entries) destroy(key, e);
    },
  };
}
