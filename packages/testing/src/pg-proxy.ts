import net from "node:net";

/**
 * A TCP proxy in front of the shared Postgres, to make Postgres unreachable for one client without
 * touching the server: `down()` cuts every open connection and refuses new ones, `up()` lets them
 * through again. What a worker sees is what it sees when the database host goes away.
 */
export type PgProxy = {
  url: string;
  down(): void;
  up(): void;
  /** Client connections open through the proxy now (what down() would cut). */
  open(): number;
  close(): Promise<void>;
};

export async function startPgProxy(databaseUrl: string): Promise<PgProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  const clients = new Set<net.Socket>();
  let isDown = false;
  const server = net.createServer((client) => {
    if (isDown) return void client.destroy();
    clients.add(client);
    client.on("close", () => clients.delete(client));
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => undefined);
    }
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    down() {
      isDown = true;
      for (const s of sockets) s.destroy();
    },
    up() {
      isDown = false;
    },
    open: () => clients.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
