import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttp, type Server } from "node:http";
import { createServer as createHttps, request } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import express from "express";
import { PRIVATE_PROXIES, proxyTrust } from "../lib/client-address.ts";
import { setSessionCookie } from "./cookies.ts";

/**
 * When the session cookie is Secure: over a real TLS connection always; behind a proxy only when
 * the operator trusts it (API_TRUST_PROXY: loopback and private peers) and it says
 * X-Forwarded-Proto: https. Real HTTP and HTTPS servers on loopback, a self-signed certificate made
 * for the run.
 */
const app = (trustProxy: boolean) =>
  express().get("/", (req, res) => {
    setSessionCookie(req, res, "token", proxyTrust(trustProxy ? PRIVATE_PROXIES : []));
    res.end();
  });

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
};

let certDir: string;
const servers: Server[] = [];

beforeAll(() => {
  certDir = mkdtempSync(join(tmpdir(), "mailroom-console-tls-"));
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"],
      ...["-keyout", join(certDir, "key.pem"), "-out", join(certDir, "cert.pem")],
    ],
    { stdio: "ignore" },
  );
});
afterAll(async () => {
  for (const s of servers) await new Promise((resolve) => s.close(resolve));
  rmSync(certDir, { recursive: true, force: true });
});

async function overHttp(trustProxy: boolean, headers: Record<string, string> = {}) {
  const server = createHttp(app(trustProxy));
  servers.push(server);
  const res = await fetch(`http://127.0.0.1:${await listen(server)}/`, { headers });
  return res.headers.get("set-cookie") ?? "";
}

describe("session cookie Secure attribute", () => {
  it("plain HTTP: not Secure, even with a forged X-Forwarded-Proto when the proxy is not trusted", async () => {
    expect(await overHttp(false)).not.toContain("Secure");
    expect(await overHttp(false, { "x-forwarded-proto": "https" })).not.toContain("Secure");
  });

  it("trusted proxy: Secure exactly when it says https (first value of a list)", async () => {
    expect(await overHttp(true, { "x-forwarded-proto": "https" })).toContain("; Secure");
    expect(await overHttp(true, { "x-forwarded-proto": "https, http" })).toContain("; Secure");
    expect(await overHttp(true, { "x-forwarded-proto": "http" })).not.toContain("Secure");
    expect(await overHttp(true)).not.toContain("Secure");
  });

  it("a TLS connection: Secure, HttpOnly, SameSite=Lax, Path=/console", async () => {
    const server = createHttps(
      { cert: readFileSync(join(certDir, "cert.pem")), key: readFileSync(join(certDir, "key.pem")) },
      app(false),
    );
    servers.push(server as unknown as Server);
    const port = await listen(server as unknown as Server);
    const cookie = await new Promise<string>((resolve, reject) => {
      request({ host: "127.0.0.1", port, path: "/", rejectUnauthorized: false }, (res) => {
        res.resume();
        resolve(String(res.headers["set-cookie"]?.[0] ?? ""));
      })
        .on("error", reject)
        .end();
    });
    expect(cookie).toMatch(/^mailroom_console=token; Path=\/console; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/);
  });
});
