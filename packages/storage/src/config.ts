import { envBoolean } from "@mailroom/config";
import { z } from "zod";

/**
 * Where raw MIME and attachment bytes live (issue 16 item 6). One definition for every service
 * that reads or writes them (rule engine, API, dispatcher, outbound sender, retention), spread into
 * each service's env schema together with `requireS3Settings`, so that choosing `s3` without its
 * settings stops the service at start with one line naming what is missing.
 */
export const byteStoreEnv = {
  /** `postgres` (default): bytes stay in their rows, as before. `s3`: an S3-compatible object store. */
  BYTE_STORE: z.enum(["postgres", "s3"]).default("postgres"),
  /** Endpoint of an S3-compatible store (MinIO, R2, …); unset: AWS's endpoint for S3_REGION. */
  S3_ENDPOINT: z.string().url().optional(),
  S3_REGION: z.string().min(1).default("us-east-1"),
  S3_BUCKET: z.string().min(1).optional(),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** `bucket` in the path instead of the host name: what MinIO and most self-hosted stores need. */
  S3_FORCE_PATH_STYLE: envBoolean(false),
  /** Lifetime of the attachment links in webhook payloads (S3: presigned URLs; 60 s to 7 days, S3's maximum). */
  SIGNED_URL_TTL_SECONDS: z.coerce.number().int().min(60).max(604_800).default(86_400),
  /**
   * BYTE_STORE=postgres: key of the HMAC in attachment links the API serves without an API key
   * (the dispatcher signs, the API checks; set the same value in both). Unset: payload links are
   * the API's own, which need a key, as before.
   */
  SIGNED_URL_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
};

type ByteStoreEnvValues = {
  BYTE_STORE: "postgres" | "s3";
  S3_ENDPOINT?: string | undefined;
  S3_REGION: string;
  S3_BUCKET?: string | undefined;
  S3_ACCESS_KEY_ID?: string | undefined;
  S3_SECRET_ACCESS_KEY?: string | undefined;
  S3_FORCE_PATH_STYLE: boolean;
  SIGNED_URL_TTL_SECONDS: number;
};

/** `.superRefine` of a service env schema: `BYTE_STORE=s3` needs a bucket and credentials. */
export function requireS3Settings(env: ByteStoreEnvValues, ctx: z.RefinementCtx): void {
  if (env.BYTE_STORE !== "s3") return;
  for (const key of ["S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"] as const) {
    if (!env[key]) ctx.addIssue({ code: "custom", path: [key], message: "is required when BYTE_STORE=s3" });
  }
}

export type S3Settings = {
  endpoint?: string | undefined;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
};

export type ByteStoreConfig = { backend: "postgres" } | { backend: "s3"; s3: S3Settings };

/** The validated env as the config `createByteStore` takes. */
export function byteStoreConfig(env: ByteStoreEnvValues): ByteStoreConfig {
  if (env.BYTE_STORE === "postgres") return { backend: "postgres" };
  if (!env.S3_BUCKET || !env.S3_ACCESS_KEY_ID || !env.S3_SECRET_ACCESS_KEY) {
    // requireS3Settings refused this already; reached only when a caller skipped it.
    throw new Error("BYTE_STORE=s3 needs S3_BUCKET, S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY");
  }
  return {
    backend: "s3",
    s3: {
      endpoint: env.S3_ENDPOINT,
      region: env.S3_REGION,
      bucket: env.S3_BUCKET,
      accessKeyId: env.S3_ACCESS_KEY_ID,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY,
      forcePathStyle: env.S3_FORCE_PATH_STYLE,
    },
  };
}
