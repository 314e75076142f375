import { describe, expect, it } from "@jest/globals";
import { commonEnv } from "./index.ts";
import { isRedisUrl } from "./redis-url.ts";

describe("REDIS_URL", () => {
  it.each([
    "redis://127.0.0.1:6379",
    "rediss://user:secret@cache.example:6380/0",
    "redis+cluster://10.0.0.1:6379",
    "redis+cluster://10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379",
    "rediss+cluster://user:p%40ss@node-1.cache.example:6380,node-2.cache.example:6380",
    "redis+cluster://[::1]:7000,[::1]:7001",
  ])("accepts %s", (url) => {
    expect(isRedisUrl(url)).toBe(true);
    expect(commonEnv.REDIS_URL.safeParse(url).success).toBe(true);
  });

  it.each(["127.0.0.1:6379", "redis+cluster://", "redis+cluster://10.0.0.1:6379,", "redis+cluster://a:1,b:port"])(
    "refuses %s",
    (url) => {
      expect(isRedisUrl(url)).toBe(false);
    },
  );
});
