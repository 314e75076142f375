import http from "node:http";
import type { AddressInfo } from "node:net";

export type ReceivedRequest = {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  receivedAt: number;
};

export type Reply = { status: number; body?: string; headers?: Record<string, string>; delayMs?: number };

/**
 * A real HTTP server on an ephemeral loopback port that records every request. `respond` decides
 * each reply (default 200), so tests can script failures, slowness and redirects.
 */
export type Receiver = {
  url: string;
  requests: ReceivedRequest[];
  respond: (fn: (req: ReceivedRequest, index: number) => Reply) => void;
  close(): Promise<void>;
};

export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let decide: (req: ReceivedRequest, index: number) => Reply = () => ({ status: 200, body: "ok" });
  // Delayed replies must not outlive close(), or jest waits for their timers.
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const rec: ReceivedRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
        receivedAt: Date.now(),
      };
      requests.push(rec);
      const reply = decide(rec, requests.length - 1);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status, { "content-type": "text/plain", ...reply.headers });
        res.end(reply.body ?? "");
      };
      if (reply.delayMs) {
        const t = setTimeout(() => {
          timers.delete(t);
          send();
        }, reply.delayMs);
        timers.add(t);
      } else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respond(fn) {
      decide = fn;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
