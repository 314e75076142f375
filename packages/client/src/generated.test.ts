import { describe, expect, it } from "@jest/globals";
import { staleClientFiles } from "../../../scripts/client-generate.ts";

/** The committed types are the API's current document: a change to a route or schema needs `npm run client:generate`. */
describe("generated client files", () => {
  it("match what npm run client:generate writes from the served OpenAPI document", async () => {
    expect(await staleClientFiles()).toEqual([]);
  });
});
