import { z } from "zod";
import { webhooksDoc } from "./openapi-webhooks.ts";
import type { RegisteredRoute, RouteDoc } from "./route.ts";
import { errorSchema } from "./schemas.ts";

type JsonSchema = Record<string, unknown>;

const COMMON_ERRORS: Record<number, string> = {
  401: "Missing or malformed Authorization header; unknown or revoked key",
  429: "Rate limit exceeded; see Retry-After",
  500: "Unexpected failure; the body names the request id (X-Request-Id)",
};

const RATE_HEADERS = {
  "RateLimit-Limit": { description: "Requests allowed per window", schema: { type: "integer" } },
  "RateLimit-Remaining": { description: "Requests left in this window", schema: { type: "integer" } },
  "RateLimit-Reset": { description: "Seconds until the window resets", schema: { type: "integer" } },
};

/** `:id` → `{id}` */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

type Convert = (schema: z.ZodType, io: "input" | "output") => JsonSchema;

/**
 * zod → JSON Schema for one document. Schemas with `.meta({ id })` come out as `$defs` +
 * `#/$defs/<id>` refs; in an OpenAPI document `#` is the document itself, so they move to
 * `components` (filled as a side effect) and the refs follow.
 */
function schemaConverter(components: Record<string, JsonSchema>): Convert {
  const relocate = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(relocate);
    if (!node || typeof node !== "object") return node;
    const out: JsonSchema = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === "$ref" && typeof v === "string" ? v.replace(/^#\/\$defs\//, "#/components/schemas/") : relocate(v);
    }
    return out;
  };
  return (schema, io) => {
    const {
      $schema: _drop,
      $defs,
      ...rest
    } = z.toJSONSchema(schema, { io, unrepresentable: "any", target: "draft-2020-12" }) as JsonSchema & {
      $defs?: Record<string, JsonSchema>;
    };
    for (const [id, def] of Object.entries($defs ?? {})) {
      const { id: _id, ...body } = def;
      components[id] ??= relocate(body) as JsonSchema;
    }
    return relocate(rest) as JsonSchema;
  };
}

/** Path parameters (every `:name` of the path, typed from `doc.params` when given), then the query's. */
function parametersOf(route: RegisteredRoute, doc: RouteDoc, convert: Convert): unknown[] {
  const parameters: unknown[] = [];
  const pathParams = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] as string);
  const paramProps = (doc.params ? convert(doc.params, "input").properties : {}) as Record<string, JsonSchema>;
  for (const name of pathParams) {
    parameters.push({ name, in: "path", required: true, schema: paramProps[name] ?? { type: "string" } });
  }
  if (doc.query) {
    const json = convert(doc.query, "input");
    const required = new Set((json.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((json.properties ?? {}) as Record<string, JsonSchema>)) {
      const { description, ...rest } = schema;
      parameters.push({
        name,
        in: "query",
        required: required.has(name),
        ...(description ? { description } : {}),
        schema: rest,
      });
    }
  }
  return parameters;
}

/** The route's own responses, then the errors it can answer: input (400), the common ones, 403 for writes, 413 for bodies. */
function responsesOf(route: RegisteredRoute, doc: RouteDoc, convert: Convert): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(doc.responses)) {
    const contentType = r.contentType ?? "application/json";
    responses[status] = {
      description: r.description,
      headers: RATE_HEADERS,
      ...(r.schema ? { content: { [contentType]: { schema: convert(r.schema, "output") } } } : {}),
    };
  }
  const errorContent = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };
  const errors: Record<string, string> = {
    ...(doc.query || doc.body || doc.params ? { 400: "Invalid input: the message names the field and the rule" } : {}),
    ...(doc.public ? {} : COMMON_ERRORS),
    ...(doc.public || route.method === "GET" ? {} : { 403: "The API key is read-only" }),
    ...(doc.body ? { 413: "Request body too large" } : {}),
    ...doc.errors,
  };
  if (route.method === "GET") delete errors[403];
  for (const [status, description] of Object.entries(errors)) {
    responses[status] = {
      description,
      content: errorContent,
      ...(status === "429" ? { headers: { "Retry-After": { schema: { type: "integer" } }, ...RATE_HEADERS } } : {}),
    };
  }
  return responses;
}

const UNDOCUMENTED: RouteDoc = {
  tag: "Undocumented",
  summary: "Undocumented route",
  responses: { 200: { description: "Undocumented" } },
};

/** One operation object; `operationId` is the method and the path in camel case (`getEmailsIdRaw`). */
function operationOf(route: RegisteredRoute, convert: Convert) {
  const path = openApiPath(route.path);
  const doc = route.doc ?? UNDOCUMENTED;
  const parameters = parametersOf(route, doc, convert);
  const responses = responsesOf(route, doc, convert);
  return {
    tags: [doc.tag],
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    operationId: `${route.method.toLowerCase()}${path
      .replace(/\/api\/v1/, "")
      .replace(/[{}]/g, "")
      .replace(/[/.-](\w)/g, (_m, c: string) => c.toUpperCase())}`,
    ...(parameters.length ? { parameters } : {}),
    ...(doc.body
      ? { requestBody: { required: true, content: { "application/json": { schema: convert(doc.body, "input") } } } }
      : {}),
    responses,
    ...(doc.public ? { security: [] } : {}),
  };
}

/**
 * OpenAPI 3.1 from the routes the app registers and the zod schemas attached to them (JSON Schema
 * 2020-12, which OpenAPI 3.1 uses as is). Schemas are inlined; only the error body is a component.
 */
export function buildOpenApi(routes: readonly RegisteredRoute[], opts: { version: string; serverUrl?: string }) {
  const components: Record<string, JsonSchema> = {};
  const convert = schemaConverter(components);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operationOf(route, convert);
  }
  components.Error = convert(errorSchema, "output");
  const webhooks = webhooksDoc(convert);

  return {
    openapi: "3.1.0",
    info: {
      title: "mailroom API",
      version: opts.version,
      description:
        "Inbound email: domains, addresses, endpoints, emails and threads. Every request carries `Authorization: Bearer svc_…`; read-only keys may only GET and HEAD.",
    },
    servers: [{ url: opts.serverUrl ?? "/" }],
    security: [{ bearer: [] }],
    paths,
    webhooks,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "API key `svc_…`" } },
      schemas: components,
    },
  };
}
