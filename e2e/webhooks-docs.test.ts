import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type ReceivedRequest, type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * docs/webhooks.md is the receivers' contract: its Node and Python verification snippets are
 * extracted from the Markdown and run, as separate processes, against real deliveries (mail in
 * over SMTP, out through the dispatcher, signed with a secret the API generated), and the body is
 * validated against the OpenAPI document's `webhooks.email.received` schema as served by the API.
 */
let stack: Stack;
let receiver: Receiver;
let acct: TestAccount;
let work: string;
const domain = "docs-hooks.example.com";
const root = path.resolve(import.meta.dirname, "..");

beforeAll(async () => {
  stack = await startStack({ backoffUnitMs: 20 });
  receiver = await startReceiver();
  acct = await stack.account();
  const dom = await acct.api("POST", "/api/v1/domains", { domain });
  expect(dom.status).toBe(201);
  await stack.admin("domains", "verify", "--domain", domain, "--force");
  work = await mkdtemp(path.join(tmpdir(), "webhooks-docs-"));
  const doc = await readFile(path.join(root, "docs/webhooks.md"), "utf8");
  // The snippet files: the documented code, then a few lines that feed it one request from stdin.
  await writeFile(
    path.join(work, "verify.mjs"),
    `${snippet(doc, "node")}
const input = JSON.parse((await import("node:fs")).readFileSync(0, "utf8"));
process.exit(verifyWebhook(Buffer.from(input.body, "base64"), input.headers, input.secret) ? 0 : 3);
`,
  );
  await writeFile(
    path.join(work, "verify.py"),
    `${snippet(doc, "python")}

if __name__ == "__main__":
    import base64, json, sys
    data = json.load(sys.stdin)
    sys.exit(0 if verify_webhook(base64.b64decode(data["body"]), data["headers"], data["secret"]) else 3)
`,
  );
});
afterAll(async () => {
  await receiver?.close();
  await stack?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

/** The fenced block right after `<!-- snippet: NAME -->`. */
function snippet(markdown: string, name: string): string {
  const m = new RegExp(`<!-- snippet: ${name} -->\\s*\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(markdown);
  if (!m?.[1]) throw new Error(`docs/webhooks.md has no ${name} snippet`);
  return m[1];
}

/** Exit code of one snippet run on one request. */
function run(lang: "node" | "python", req: { body: Buffer; headers: unknown }, secret: string): Promise<number> {
  const [cmd, file] = lang === "node" ? [process.execPath, "verify.mjs"] : ["python3", "verify.py"];
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, [path.join(work, file)], { timeout: 60_000 }, (err, _out, stderr) => {
      if (err && typeof err.code !== "number") return reject(err);
      if (stderr.trim()) return reject(new Error(`${lang} snippet wrote to stderr: ${stderr}`));
      resolve(typeof err?.code === "number" ? err.code : 0);
    });
    child.stdin?.end(JSON.stringify({ body: req.body.toString("base64"), headers: req.headers, secret }));
  });
}

let mailed = 0;
async function deliver(to: string): Promise<ReceivedRequest> {
  const subject = `docs ${++mailed}`;
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true });
  await transport.sendMail({ from: "alice@sender.example", to, subject, text: "Hello.\n" });
  transport.close();
  return waitFor(
    async () => receiver.requests.find((r) => JSON.parse(r.body.toString("utf8")).data.email.subject === subject),
    { what: `delivery of "${subject}"`, timeoutMs: 30_000 },
  );
}

describe("docs/webhooks.md against real deliveries", () => {
  let secret: string;
  let endpointId: string;
  let to: string;
  let first: ReceivedRequest;

  beforeAll(async () => {
    const ep = await acct.api("POST", "/api/v1/endpoints", { url: `${receiver.url}/hooks` });
    expect(ep.status).toBe(201);
    ({ id: endpointId, secret } = ep.body);
    const addr = await acct.api("POST", "/api/v1/addresses", {
      domainId: await domainId(),
      localPart: "docs",
      endpointId,
    });
    expect(addr.status).toBe(201);
    to = `docs@${domain}`;
    first = await deliver(to);
  });

  const domainId = async () =>
    ((await acct.api("GET", "/api/v1/domains")).body.data as { id: string; domain: string }[]).find(
      (d) => d.domain === domain,
    )!.id;

  it("the body matches the OpenAPI document's webhooks.email.received schema", async () => {
    const doc = (await acct.api("GET", "/api/v1/openapi.json")).body;
    const op = doc.webhooks["email.received"].post;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const validate = ajv.compile({ ...op.requestBody.content["application/json"].schema, components: doc.components });
    const body = JSON.parse(first.body.toString("utf8"));
    expect(validate(body) ? [] : validate.errors).toEqual([]);
    expect(validate({ ...body, data: { ...body.data, email: { ...body.data.email, subject: 1 } } })).toBe(false);
    // Every header the document requires was sent.
    const required = (op.parameters as { name: string; in: string }[]).filter((p) => p.in === "header");
    expect(required.length).toBeGreaterThanOrEqual(6);
    for (const p of required) expect([p.name, typeof first.headers[p.name.toLowerCase()]]).toEqual([p.name, "string"]);
  });

  it("the Node and Python snippets verify a real delivery and reject a wrong secret or a changed body", async () => {
    const tampered = { ...first, body: Buffer.from(first.body.toString("utf8").replace("Hello.", "Hellp.")) };
    for (const lang of ["node", "python"] as const) {
      expect([lang, await run(lang, first, secret)]).toEqual([lang, 0]);
      expect([lang, await run(lang, first, `whsec_${"x".repeat(40)}`)]).toEqual([lang, 3]);
      expect([lang, await run(lang, tampered, secret)]).toEqual([lang, 3]);
    }
  });

  it("during a secret rotation both secrets verify with both snippets", async () => {
    const rotated = await acct.api("POST", `/api/v1/endpoints/${endpointId}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const next: string = rotated.body.secret;
    expect(next).not.toBe(secret);
    const req = await deliver(to);
    for (const lang of ["node", "python"] as const) {
      expect([lang, await run(lang, req, secret)]).toEqual([lang, 0]);
      expect([lang, await run(lang, req, next)]).toEqual([lang, 0]);
    }
  });
});
