import { EventEmitter } from "node:events";
import { createServer, type Server } from "node:net";
import { describe, expect, test } from "@jest/globals";
import { awaitDependencies, hostOf, listen, redisDependency, StartupError } from "./startup.ts";

describe("awaitDependencies", () => {
  test("retries a failing check until it answers", async () => {
    let calls = 0;
    const flaky = {
      name: "database at db:5432",
      ready: async () => {
        calls++;
        if (calls < 3) throw new Error("connect ECONNREFUSED");
      },
    };
    await awaitDependencies([flaky], 60_000, undefined, 1);
    expect(calls).toBe(3);
  });

  test("past the timeout: one StartupError naming each dependency still down and its last error", async () => {
    const up = { name: "Redis at r:6379", ready: async () => "PONG" };
    const down = { name: "database at db:5432", ready: () => Promise.reject(new Error("connect ECONNREFUSED")) };
    await expect(awaitDependencies([up, down], 50, undefined, 1)).rejects.toThrow(
      new StartupError("database at db:5432 unreachable: connect ECONNREFUSED (STARTUP_TIMEOUT_MS=50)"),
    );
  });

  test("a check that never settles (a black-holed address) is cut at the deadline", async () => {
    const hangs = { name: "database at 10.255.255.1:5432", ready: () => new Promise<never>(() => {}) };
    await expect(awaitDependencies([hangs], 50)).rejects.toThrow(/10\.255\.255\.1:5432 unreachable: no answer/);
  });
});

describe("redisDependency", () => {
  class FakeClient extends EventEmitter {
    status = "connecting";
  }

  test("waits for the client's ready, reporting its last connection error on timeout", async () => {
    const client = new FakeClient();
    const dep = redisDependency("redis://:secret@cache:6380/0", client);
    expect(dep.name).toBe("Redis at cache:6380"); // never the password
    const waiting = awaitDependencies([dep], 60_000);
    client.emit("error", new Error("connect ECONNREFUSED 10.0.0.1:6380"));
    client.status = "ready";
    client.emit("ready");
    await waiting;
    // Every listener it added is gone: nothing left behind on a long-lived client.
    expect(client.listenerCount("error") + client.listenerCount("ready")).toBe(0);
  });

  test("a closed client fails at once instead of waiting out the timeout", async () => {
    const client = new FakeClient();
    client.status = "end";
    await expect(awaitDependencies([redisDependency("redis://cache:6379", client)], 600_000)).rejects.toThrow(
      /Redis at cache:6379 unreachable: the client was closed/,
    );
  });
});

test("hostOf names host:port and never credentials", () => {
  expect(hostOf("postgresql://u:p@db.internal:5432/mailroom?sslmode=require")).toBe("db.internal:5432");
  expect(hostOf("nonsense")).toBe("(unparseable URL)");
});

describe("listen", () => {
  test("resolves once listening; a taken port rejects with the address and the reason", async () => {
    const first: Server = createServer();
    await listen(first, 0, "127.0.0.1");
    const { port } = first.address() as { port: number };
    expect(first.listening).toBe(true);
    const second = createServer();
    await expect(listen(second, port, "127.0.0.1")).rejects.toThrow(
      new StartupError(`cannot listen on 127.0.0.1:${port}: the port is already in use (EADDRINUSE)`),
    );
    expect(second.listening).toBe(false);
    await new Promise((r) => first.close(r));
  });
});
