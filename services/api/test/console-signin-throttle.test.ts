import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createMember, type Stack, signInFrom, startStack, type TestAccount } from "@mailroom/stack";
import { SIGN_IN_FAILURES_PER_IP } from "../src/console/ip-throttle.ts";

/**
 * Per-IP sign-in throttling (issue 17, beside the per-member lockout): one address that fails
 * SIGN_IN_FAILURES_PER_IP times, over many different emails (so no member is ever locked), is
 * refused with 429 even with a right password; another address still signs in; a made-up
 * X-Forwarded-For does not escape it when no proxy is trusted. Real HTTP from two loopback
 * addresses (127.0.0.1 and 127.0.0.2) against real Redis and Postgres.
 */
const PASSWORD = "a long enough password";
let stack: Stack;
let acct: TestAccount;

/** POST /console/api/session from `localAddress` (a loopback address of this machine). */
const signIn = (localAddress: string, email: string, password: string, headers: Record<string, string> = {}) =>
  signInFrom(stack, localAddress, email, password, headers);

beforeAll(async () => {
  stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
  acct = await stack.account();
  await createMember(stack, acct.accountId, "real@throttle.example", PASSWORD);
});
afterAll(async () => {
  await stack?.close();
});

describe("per-IP sign-in throttling", () => {
  it("a right password signs in; failures below the limit do not stop it", async () => {
    for (let i = 0; i < 3; i++) expect((await signIn("127.0.0.1", `nobody${i}@x.example`, "guess")).status).toBe(401);
    expect((await signIn("127.0.0.1", "real@throttle.example", PASSWORD)).status).toBe(201);
  });

  it(`after ${SIGN_IN_FAILURES_PER_IP} failures over many emails, the address is refused (429) even with the right password`, async () => {
    for (let i = 3; i < SIGN_IN_FAILURES_PER_IP; i++) {
      expect((await signIn("127.0.0.1", `nobody${i}@x.example`, "guess")).status).toBe(401);
    }
    const refused = await signIn("127.0.0.1", "real@throttle.example", PASSWORD);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    // The member's email was never locked: the lockout counts per email, and none of these was it.
    expect(await stack.prisma.signInFailure.count({ where: { lockedUntil: { not: null } } })).toBe(0);
    // Claiming another address in X-Forwarded-For does not help when no proxy is trusted.
    const spoofed = await signIn("127.0.0.1", "real@throttle.example", PASSWORD, { "x-forwarded-for": "198.51.100.7" });
    expect(spoofed.status).toBe(429);
  });

  it("another address still signs in", async () => {
    expect((await signIn("127.0.0.2", "real@throttle.example", PASSWORD)).status).toBe(201);
  });
});
