import type { CursorCodec, PrismaClient } from "@mailroom/db";
import type { DomainDns } from "@mailroom/domain-verification";
import type { AddressResolver } from "@mailroom/egress";
import type { Logger } from "@mailroom/log";
import type { ByteStore } from "@mailroom/storage";
import type { EventHub } from "../events/hub.ts";

/** What the service layer needs; shared by the REST routes and the MCP tools. */
export type OpsContext = {
  prisma: PrismaClient;
  logger: Logger;
  cursors: CursorCodec;
  config: {
    mxHost: string;
    dkimDomain: string;
    publicApiUrl: string;
    allowPrivateDestinations: boolean;
    /** DEFAULT_RETENTION_DAYS: what new accounts keep (null: forever); absent: 30 (shown on GET /account). */
    defaultRetentionDays?: number | null;
  };
  /** SSRF check for endpoint URLs; resolves the host and refuses non-public addresses. */
  checkDestination: (url: string) => Promise<{ ok: true } | { ok: false; error: string }>;
  /** Queues an outbound email for the sender (queue `outbound`); absent: the sender's sweeper finds it. */
  enqueueOutbound?: (emailId: string) => Promise<void>;
  /** DNS for `POST /domains/{id}/verify` (DNS_SERVERS); default: the system's resolvers. */
  domainDns?: DomainDns;
  /**
   * Queues attempt `n` of a delivery on its destination type's queue (`delivery` or `forward`:
   * deliveryEnqueuer); absent: the sweeper of the destination type's worker finds it.
   */
  enqueueDelivery?: (delivery: { id: string; endpointType: string }, attempt: number) => Promise<void>;
  /**
   * DNS behind the SSRF guard of `POST /endpoints/{id}/test`: main.ts builds it from DNS_SERVERS
   * (createEgressResolver), the same resolver as checkDestination and as the dispatcher's. Required,
   * so no path falls back to the system's resolvers while another asks DNS_SERVERS.
   */
  egressResolver: AddressResolver;
  /** Raw MIME and attachment bytes (BYTE_STORE); absent: read from their Postgres rows. */
  bytes?: ByteStore;
  /** Live events (wait_for_email, GET /events): this replica's Redis subscription; absent: those answer 503. */
  events?: EventHub;
};
