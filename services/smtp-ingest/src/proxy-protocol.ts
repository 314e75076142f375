import { isIP } from "node:net";

/**
 * The PROXY protocol header a load balancer puts before the SMTP bytes (HAProxy's spec, v1 text and
 * v2 binary; AWS NLB, GCP, Azure and most Kubernetes ingress send one or the other). `source` is
 * the client the proxy accepted; null for `PROXY UNKNOWN`, a v2 LOCAL command (the proxy's own
 * health check) or an address family without an IP (AF_UNIX, AF_UNSPEC): then the connection is the
 * proxy's own and keeps the peer address.
 */
export type ProxyHeader = { length: number; source: { address: string; port: number } | null };

export type ParsedProxyHeader = { kind: "more" } | { kind: "invalid"; reason: string } | ({ kind: "ok" } & ProxyHeader);

const V2_SIGNATURE = Buffer.from("0d0a0d0a000d0a515549540a", "hex");
const V1_PREFIX = Buffer.from("PROXY ", "latin1");
/** The v1 line is at most 107 bytes with its CRLF (spec §2.1). */
const V1_MAX = 107;
/** Address block plus TLVs read for a v2 header; real proxies send well under this. */
export const V2_MAX_BLOCK = 4096;

const more = { kind: "more" } as const;
const invalid = (reason: string): ParsedProxyHeader => ({ kind: "invalid", reason });
const ok = (length: number, source: ProxyHeader["source"]): ParsedProxyHeader => ({ kind: "ok", length, source });

/** Reads a header from the first bytes of a connection: "more" until it is complete. */
export function parseProxyHeader(buf: Buffer): ParsedProxyHeader {
  if (buf.length === 0) return more;
  if (startsLike(buf, V2_SIGNATURE)) return buf.length < V2_SIGNATURE.length ? more : parseV2(buf);
  if (startsLike(buf, V1_PREFIX)) return buf.length < V1_PREFIX.length ? more : parseV1(buf);
  return invalid("not a PROXY protocol header");
}

/** `buf` and `prefix` agree on their common length. */
const startsLike = (buf: Buffer, prefix: Buffer) => {
  const n = Math.min(buf.length, prefix.length);
  return buf.subarray(0, n).equals(prefix.subarray(0, n));
};

function parseV1(buf: Buffer): ParsedProxyHeader {
  const end = buf.indexOf("\r\n");
  if (end < 0) return buf.length >= V1_MAX ? invalid("PROXY v1 line too long") : more;
  if (end + 2 > V1_MAX) return invalid("PROXY v1 line too long");
  const parts = buf.subarray(0, end).toString("latin1").split(" ");
  if (parts[1] === "UNKNOWN") return ok(end + 2, null);
  const [, proto, src = "", dst = "", srcPort = "", dstPort = ""] = parts;
  const family = proto === "TCP4" ? 4 : proto === "TCP6" ? 6 : 0;
  if (parts.length !== 6 || !family) return invalid("malformed PROXY v1 line");
  if (isIP(src) !== family || isIP(dst) !== family) return invalid("PROXY v1 address of the wrong family");
  if (!isPort(srcPort) || !isPort(dstPort)) return invalid("PROXY v1 port out of range");
  return ok(end + 2, { address: src, port: Number(srcPort) });
}

const isPort = (p: string) => /^(0|[1-9]\d{0,4})$/.test(p) && Number(p) <= 65535;

function parseV2(buf: Buffer): ParsedProxyHeader {
  if (buf.length < 16) return more;
  const version = (buf[12] as number) >> 4;
  const command = (buf[12] as number) & 0x0f;
  if (version !== 2) return invalid(`PROXY v2 header with version ${version}`);
  if (command > 1) return invalid(`PROXY v2 command ${command}`);
  const blockLength = buf.readUInt16BE(14);
  if (blockLength > V2_MAX_BLOCK) return invalid("PROXY v2 header too long");
  const length = 16 + blockLength;
  if (buf.length < length) return more;
  if (command === 0) return ok(length, null); // LOCAL
  const family = (buf[13] as number) >> 4;
  const block = buf.subarray(16, length);
  if (family === 1) {
    // AF_INET: source, destination, source port, destination port
    if (block.length < 12) return invalid("PROXY v2 IPv4 block too short");
    return ok(length, { address: [...block.subarray(0, 4)].join("."), port: block.readUInt16BE(8) });
  }
  if (family === 2) {
    if (block.length < 36) return invalid("PROXY v2 IPv6 block too short");
    const groups = Array.from({ length: 8 }, (_, i) => block.readUInt16BE(i * 2).toString(16));
    return ok(length, { address: groups.join(":"), port: block.readUInt16BE(32) });
  }
  return ok(length, null); // AF_UNSPEC or AF_UNIX: no client IP to take
}
