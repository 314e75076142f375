import http from "node:http";
import { hashPassword } from "@mailroom/core";
import { readBody, type Stack } from "./stack.ts";

/** A member's console client over real HTTP: keeps the session cookie and the CSRF token. */
export type ConsoleClient = {
  cookie: string | undefined;
  csrf: string | undefined;
  call(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  signIn(email: string, password: string): Promise<{ status: number; body: any; headers: Headers }>;
};

export function consoleClient(stack: Stack): ConsoleClient {
  const c: ConsoleClient = {
    cookie: undefined,
    csrf: undefined,
    async call(method, path, body, headers = {}) {
      const res = await fetch(`${stack.apiUrl}${path}`, {
        method,
        headers: {
          ...(c.cookie ? { cookie: c.cookie } : {}),
          ...(c.csrf && method !== "GET" ? { "x-csrf-token": c.csrf } : {}),
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
          ...headers,
        },
        ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: await readBody(res), headers: res.headers };
    },
    async signIn(email, password) {
      const r = await c.call("POST", "/console/api/session", { email, password });
      if (r.status === 201) {
        c.cookie = (r.headers.get("set-cookie") ?? "").split(";")[0];
        c.csrf = r.body.csrfToken;
      }
      return r;
    },
  };
  return c;
}

/**
 * scrypt at 1/32 of the members' cost, for `cheapHash` members: verifying it costs ~3 ms of CPU
 * instead of ~100 ms, which on a 2-core machine at load average 40 was 2.6-5 s of the sign-in.
 */
const TEST_SCRYPT = { N: 2 ** 10, r: 8, p: 1 } as const;

/**
 * Creates a member with the admin CLI and sets their password through the one-time link.
 * `cheapHash`: the stored hash is then replaced by one of the same password at TEST_SCRYPT (the
 * parameters travel with the hash, so sign-in verifies it the same way), for browser tests whose
 * subject is not the password check and whose sign-in must not wait on scrypt on a busy machine.
 */
export async function createMember(
  stack: Stack,
  accountId: string,
  email: string,
  password: string,
  opts: { cheapHash?: boolean } = {},
) {
  const m = await stack.admin("members", "create", "--account", accountId, "--email", email);
  const token = new URL(String(m.setPasswordUrl)).hash.replace("#token=", "");
  const set = await consoleClient(stack).call("POST", "/console/api/password", { token, password });
  if (set.status !== 200) throw new Error(`set password: ${set.status} ${JSON.stringify(set.body)}`);
  if (opts.cheapHash) {
    const passwordHash = await hashPassword(password, TEST_SCRYPT);
    await stack.prisma.member.update({ where: { id: String(m.id) }, data: { passwordHash } });
  }
  return { id: String(m.id), token };
}

export type SignInAnswer = { status: number; headers: http.IncomingHttpHeaders; body: string };

/**
 * POST /console/api/session from `localAddress`, a loopback address of this machine (127.0.0.2, …):
 * a client at another address, for per-address sign-in limits, over a real connection from there.
 */
export function signInFrom(
  stack: Stack,
  localAddress: string,
  email: string,
  password: string,
  headers: Record<string, string> = {},
): Promise<SignInAnswer> {
  const url = new URL(`${stack.apiUrl}/console/api/session`);
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        localAddress,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers },
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
