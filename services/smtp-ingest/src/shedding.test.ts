import { describe, expect, it } from "@jest/globals";
import { chooseVictim } from "./shedding.ts";

describe("chooseVictim (which session makes room when the server is full)", () => {
  it("takes the pre-MAIL session that has gone longest without finishing a command", () => {
    expect(
      chooseVictim([
        { key: "sender mid-transaction, idle 50 s", preMail: false, idleMs: 50_000 },
        { key: "slowloris, 20 s", preMail: true, idleMs: 20_000 },
        { key: "slowloris, 30 s", preMail: true, idleMs: 30_000 },
        { key: "just greeted", preMail: true, idleMs: 5 },
      ]),
    ).toBe("slowloris, 30 s");
  });

  it("falls back to the longest-idle session in a transaction; none when there is no candidate", () => {
    expect(
      chooseVictim([
        { key: "a", preMail: false, idleMs: 1_000 },
        { key: "b", preMail: false, idleMs: 9_000 },
      ]),
    ).toBe("b");
    expect(chooseVictim([])).toBeUndefined();
  });
});
