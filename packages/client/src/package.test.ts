import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { signatureHeader, standardWebhookHeaders } from "@mailroom/core";
import { installPacked, type PackedInstall } from "@mailroom/testing";

/**
 * @mailroom/client as published: `npm pack` (its build runs), unpacked outside the checkout, then
 * imported by plain Node and type-checked by a consumer's TypeScript.
 */
describe("@mailroom/client package", () => {
  let pkg: PackedInstall;
  beforeAll(async () => {
    pkg = await installPacked("packages/client", ["openapi-fetch", "openapi-typescript-helpers", "@types/node"]);
  }, 180_000);
  afterAll(() => pkg?.cleanup());

  it("ships the built code, types, the OpenAPI document, README and LICENSE, and no tests", () => {
    expect(pkg.files).toEqual(
      expect.arrayContaining([
        "LICENSE",
        "README.md",
        "dist/index.js",
        "dist/index.d.ts",
        "dist/generated/openapi.d.ts",
        "dist/webhooks.js",
        "package.json",
        "src/generated/openapi.json",
      ]),
    );
    expect(pkg.files.filter((f) => f.includes("test") || (f.endsWith(".ts") && !f.endsWith(".d.ts")))).toEqual([]);
  });

  it("runs outside the checkout: createClient and verifyWebhook on a signed body", async () => {
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1234abcd";
    const body = JSON.stringify({ id: "dlv_1", type: "email.received", data: {} });
    const t = Math.floor(Date.now() / 1000);
    const headers = {
      "x-service-signature": signatureHeader([secret], body, t),
      ...standardWebhookHeaders("dlv_1", [secret], body, t),
    };
    const script = `
      import { createClient, verifyWebhook } from "@mailroom/client";
      const client = createClient({ baseUrl: "http://127.0.0.1:9", apiKey: "svc_x" });
      const e = verifyWebhook(process.env.BODY, JSON.parse(process.env.HEADERS), process.env.SECRET);
      console.log(typeof client.GET, e.id);`;
    const { stdout } = await pkg.node(["--input-type=module", "-e", script], {
      BODY: body,
      HEADERS: JSON.stringify(headers),
      SECRET: secret,
    });
    expect(stdout.trim()).toBe("function dlv_1");
  });

  it("types a consumer's code with the named schemas", async () => {
    await writeFile(
      path.join(pkg.dir, "consumer.ts"),
      `import { createClient, type Delivery, type Email, type Endpoint, type ShieldRule } from "@mailroom/client";
       const client = createClient({ baseUrl: "https://mail.example.com", apiKey: "svc_x" });
       export async function subject(id: string): Promise<string | undefined> {
         const { data } = await client.GET("/api/v1/emails/{id}", { params: { path: { id } } });
         const email: Email | undefined = data;
         return email?.strippedText;
       }
       export type Named = [Delivery["status"], Endpoint["url"], ShieldRule["action"]];
       // @ts-expect-error: not a path of the API
       client.GET("/api/v1/nothing");\n`,
    );
    await writeFile(
      path.join(pkg.dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, module: "nodenext", target: "es2022", types: ["node"] },
        files: ["consumer.ts"],
      }),
    );
    const tsc = path.resolve(import.meta.dirname, "../../../node_modules/typescript/bin/tsc");
    const r = await pkg.node([tsc, "-p", "tsconfig.json"]).catch((err: { stdout: string }) => ({ stdout: err.stdout }));
    expect(r.stdout).toBe("");
  }, 120_000);
});
