// s3rver ships no types; the part of its API the tests use.
declare module "s3rver" {
  import type { Server } from "node:http";
  import type { AddressInfo } from "node:net";
  export default class S3rver {
    constructor(options: {
      address?: string;
      port?: number;
      directory: string;
      silent?: boolean;
      resetOnClose?: boolean;
      configureBuckets?: { name: string; configs?: string[] }[];
    });
    run(): Promise<AddressInfo>;
    /** The HTTP server run() started. */
    httpServer?: Server;
    close(): Promise<void>;
  }
}
