import { describe, expect, it } from "@jest/globals";
import { hostOf } from "./startup.ts";

describe("hostOf", () => {
  it("names the host of a URL, and the seeds of a Redis Cluster URL (which URL cannot parse)", () => {
    expect(hostOf("redis://127.0.0.1:6379")).toBe("127.0.0.1:6379");
    expect(hostOf("postgresql://postgres:pw@db.example:5432/mailroom")).toBe("db.example:5432");
    expect(hostOf("redis+cluster://u:p@10.0.0.1:6379,10.0.0.2:6379")).toBe("10.0.0.1:6379,10.0.0.2:6379");
  });
});
