import { randomInt } from "node:crypto";
import dgram from "node:dgram";
import { promises as dns } from "node:dns";
import net from "node:net";
import { decode, encode, type Packet, type Answer as PacketAnswer, RECURSION_DESIRED } from "dns-packet";

/**
 * A stub DNS client that, unlike `dns.promises.resolveTxt`/`resolveMx`, reports each answer's TTL
 * (and, for NXDOMAIN/NODATA, the SOA's negative TTL), so that the cache can honour them.
 * Records come back in the shapes `dns.promises.resolve(name, type)` uses, which mailauth expects.
 */
export type QueryType = "A" | "AAAA" | "TXT" | "MX" | "PTR" | "CNAME" | "NS";
export const QUERY_TYPES: ReadonlySet<string> = new Set<QueryType>(["A", "AAAA", "TXT", "MX", "PTR", "CNAME", "NS"]);

export type DnsAnswer = { records: unknown[]; ttlS: number };
export type DnsQuery = (name: string, type: QueryType) => Promise<DnsAnswer>;

/**
 * Errors carry Node's dns codes (mailauth tells "no record" from "temporary failure" by them).
 * `negativeTtlS` is set for NXDOMAIN/NODATA answers that carried an SOA (RFC 2308 §5); without one the
 * answer must not be cached.
 */
export class DnsQueryError extends Error {
  constructor(
    readonly code: "ENOTFOUND" | "ENODATA" | "ESERVFAIL" | "EREFUSED" | "ETIMEOUT" | "ECONNREFUSED" | "EBADRESP",
    message: string,
    readonly negativeTtlS?: number,
  ) {
    super(message);
  }
}

export type QueryOptions = {
  /** "host", "host:port", "[v6]:port"; default: the system's resolvers (`dns.getServers()`). */
  servers?: string[];
  /** Per attempt. */
  timeoutMs?: number;
  /** Attempts per server list pass (c-ares' `tries`). */
  tries?: number;
};

type Server = { host: string; port: number };

const RCODE_ERRORS: Record<string, DnsQueryError["code"]> = { SERVFAIL: "ESERVFAIL", REFUSED: "EREFUSED" };

export function createDnsQuery(opts: QueryOptions = {}): DnsQuery {
  const servers = (opts.servers?.length ? opts.servers : dns.getServers()).map(parseServer);
  const timeoutMs = opts.timeoutMs ?? 2_500;
  const tries = opts.tries ?? 2;
  return async (name, type) => {
    let last: unknown = new DnsQueryError("ETIMEOUT", `${type} ${name}: no DNS server`);
    for (let attempt = 0; attempt < tries; attempt++) {
      for (const server of servers) {
        try {
          const res = await exchange(server, name, type, timeoutMs);
          return toAnswer(res, name, type);
        } catch (err) {
          // A definite answer (NXDOMAIN, NODATA) is final; failures try the next server.
          if (err instanceof DnsQueryError && (err.code === "ENOTFOUND" || err.code === "ENODATA")) throw err;
          last = err;
        }
      }
    }
    throw last;
  };
}

function parseServer(s: string): Server {
  const v6 = /^\[(.+)\](?::(\d+))?$/.exec(s);
  if (v6?.[1]) return { host: v6[1], port: Number(v6[2] ?? 53) };
  if (net.isIPv6(s)) return { host: s, port: 53 };
  const [host = s, port] = s.split(":");
  return { host, port: Number(port ?? 53) };
}

/** One question over UDP; a truncated answer is asked again over TCP (RFC 7766). */
async function exchange(server: Server, name: string, type: QueryType, timeoutMs: number): Promise<Packet> {
  const id = randomInt(0, 0x10000);
  const query = encode({
    type: "query",
    id,
    flags: RECURSION_DESIRED,
    questions: [{ type, name, class: "IN" }],
    additionals: [{ type: "OPT", name: ".", udpPayloadSize: 1232 } as unknown as PacketAnswer],
  });
  const res = await udpExchange(server, query, id, name, type, timeoutMs);
  if ((res as { flag_tc?: boolean }).flag_tc) return tcpExchange(server, query, id, name, type, timeoutMs);
  return res;
}

const matches = (res: Packet, id: number, name: string, type: string): boolean => {
  const q = res.questions?.[0];
  return res.id === id && res.type === "response" && q?.type === type && sameName(q.name, name);
};

function udpExchange(
  server: Server,
  query: Buffer,
  id: number,
  name: string,
  type: string,
  timeoutMs: number,
): Promise<Packet> {
  return new Promise((resolve, reject) => {
    // A fresh socket (and so a random source port) per question: spoofed answers must guess both.
    const socket = dgram.createSocket(net.isIPv6(server.host) ? "udp6" : "udp4");
    const done = (fn: () => void) => {
      clearTimeout(timer);
      socket.close();
      fn();
    };
    const timer = setTimeout(
      () => done(() => reject(new DnsQueryError("ETIMEOUT", `${type} ${name}: timeout`))),
      timeoutMs,
    );
    socket.on("error", (err: NodeJS.ErrnoException) =>
      done(() => reject(new DnsQueryError(err.code === "ECONNREFUSED" ? "ECONNREFUSED" : "EBADRESP", err.message))),
    );
    socket.on("message", (msg, rinfo) => {
      if (rinfo.port !== server.port) return;
      let res: Packet;
      try {
        res = decode(msg);
      } catch {
        return; // not an answer to us; keep waiting
      }
      if (matches(res, id, name, type)) done(() => resolve(res));
    });
    socket.connect(server.port, server.host, () => socket.send(query));
  });
}

function tcpExchange(
  server: Server,
  query: Buffer,
  id: number,
  name: string,
  type: string,
  timeoutMs: number,
): Promise<Packet> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, server.host);
    let buf = Buffer.alloc(0);
    const done = (fn: () => void) => {
      clearTimeout(timer);
      socket.destroy();
      fn();
    };
    const timer = setTimeout(
      () => done(() => reject(new DnsQueryError("ETIMEOUT", `${type} ${name}: timeout (tcp)`))),
      timeoutMs,
    );
    socket.on("error", (err) => done(() => reject(new DnsQueryError("EBADRESP", err.message))));
    socket.on("connect", () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(query.length);
      socket.write(Buffer.concat([len, query]));
    });
    socket.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length < 2 || buf.length < 2 + buf.readUInt16BE(0)) return;
      try {
        const res = decode(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        if (matches(res, id, name, type)) return done(() => resolve(res));
        done(() => reject(new DnsQueryError("EBADRESP", `${type} ${name}: mismatched answer`)));
      } catch (err) {
        done(() => reject(new DnsQueryError("EBADRESP", String(err))));
      }
    });
  });
}

function toAnswer(res: Packet, name: string, type: QueryType): DnsAnswer {
  const rcode = (res as { rcode?: string }).rcode ?? "NOERROR";
  if (rcode === "NXDOMAIN") throw new DnsQueryError("ENOTFOUND", `${type} ${name}: NXDOMAIN`, negativeTtl(res));
  if (rcode !== "NOERROR") throw new DnsQueryError(RCODE_ERRORS[rcode] ?? "EBADRESP", `${type} ${name}: ${rcode}`);
  const answers = res.answers ?? [];
  const wanted = answers.filter((a) => a.type === type);
  if (wanted.length === 0) throw new DnsQueryError("ENODATA", `${type} ${name}: no data`, negativeTtl(res));
  // The chain's TTL is its shortest link: a CNAME that expires sooner invalidates the target's answer.
  const ttlS = Math.min(
    ...answers.filter((a) => a.type === type || a.type === "CNAME").map((a) => (a as { ttl?: number }).ttl ?? 0),
  );
  return { records: wanted.map((a) => toNodeRecord(a, type)), ttlS };
}

/** RFC 2308 §5: the negative TTL is the lesser of the SOA record's TTL and its MINIMUM field. */
function negativeTtl(res: Packet): number | undefined {
  const soa = (res.authorities ?? []).find((a) => a.type === "SOA") as
    | { ttl?: number; data: { minimum: number } }
    | undefined;
  return soa ? Math.min(soa.ttl ?? 0, soa.data.minimum) : undefined;
}

function toNodeRecord(a: PacketAnswer, type: QueryType): unknown {
  const data = (a as { data: unknown }).data;
  switch (type) {
    case "TXT": {
      // Character-strings are bytes; latin1 keeps them byte for byte when a record is split mid-character.
      const chunks = Array.isArray(data) ? data : [data];
      return chunks.map((c) => (Buffer.isBuffer(c) ? c.toString("latin1") : String(c)));
    }
    case "MX": {
      const mx = data as { preference: number; exchange: string };
      return { priority: mx.preference, exchange: mx.exchange };
    }
    default:
      return String(data);
  }
}

const sameName = (a: string, b: string) => a.toLowerCase().replace(/\.$/, "") === b.toLowerCase().replace(/\.$/, "");
