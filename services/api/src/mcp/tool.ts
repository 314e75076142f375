import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { parseQuery } from "../lib/http.ts";
import type { OpsContext } from "../ops/context.ts";

/**
 * One MCP tool: an input schema, what an agent reads about it, whether it writes, and a `run` that
 * calls the service layer in ../ops — the very functions the REST routes call.
 */
export type ToolDef = {
  name: string;
  title: string;
  description: string;
  input: z.ZodObject;
  /** `write` tools need a full-access key (spec §5.6); `read` tools work with any key. */
  access: "read" | "write";
  annotations: ToolAnnotations;
  /** `signal` aborts when the caller goes away (cancellation, closed connection): long waits stop. */
  run(ctx: OpsContext, accountId: string, args: unknown, signal?: AbortSignal): Promise<Record<string, unknown>>;
};

type Spec<S extends z.ZodObject> = {
  name: string;
  title: string;
  description: string;
  input: S;
  run(ctx: OpsContext, accountId: string, args: z.output<S>, signal?: AbortSignal): Promise<object>;
};

const asRecord = (v: object) => v as Record<string, unknown>;

/** A `list_*` / `get_*` tool: never changes anything, works with read-only keys. */
export function readTool<S extends z.ZodObject>(spec: Spec<S>): ToolDef {
  return {
    ...spec,
    access: "read",
    annotations: { title: spec.title, readOnlyHint: true, openWorldHint: false },
    run: async (ctx, accountId, args, signal) => asRecord(await spec.run(ctx, accountId, args as z.output<S>, signal)),
  };
}

/** A tool that changes data: needs a full-access key. */
export function writeTool<S extends z.ZodObject>(
  spec: Spec<S> & { destructive: boolean; idempotent: boolean },
): ToolDef {
  const { destructive, idempotent, ...rest } = spec;
  return {
    ...rest,
    access: "write",
    annotations: {
      title: spec.title,
      readOnlyHint: false,
      destructiveHint: destructive,
      idempotentHint: idempotent,
      openWorldHint: false,
    },
    run: async (ctx, accountId, args, signal) => asRecord(await spec.run(ctx, accountId, args as z.output<S>, signal)),
  };
}

/** `{ id }`, for every `get_*` tool. */
export const idInput = (what: string, prefix: string) =>
  z
    .object({
      id: z
        .string({ error: `is required and must be ${what} id (${prefix}_…)` })
        .min(1, "must not be empty")
        .describe(`the ${what}'s id (${prefix}_…)`),
    })
    .strict();

/**
 * Tool arguments as the REST query string would carry them: every value a string, absent ones
 * left out. The list operations then parse exactly what `GET /…?limit=…` would give them.
 */
export function asQuery<S extends z.ZodType>(schema: S, args: Record<string, unknown>): z.output<S> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(args)) {
    if (v !== undefined && v !== null) out[k] = String(v);
  }
  return parseQuery(schema, out);
}
