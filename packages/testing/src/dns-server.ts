import dgram from "node:dgram";
import net from "node:net";
import dns2, { type Packet as DnsPacket, type DnsResource } from "dns2";

const { Packet } = dns2;

/**
 * A real authoritative DNS server on 127.0.0.1 (UDP and TCP on one ephemeral port) answering from a
 * mutable in-memory zone. Point a resolver at it with
 * `const r = new dns.promises.Resolver(); r.setServers([server.server])`.
 * Answers carry TTL 0 so that c-ares never caches them and `set()` is seen by the next query; a test of a
 * cache can give them a TTL (`setTtl`) and make NXDOMAIN/NODATA answers carry an SOA (`setNegativeTtl`).
 */
export type MxValue = { priority: number; exchange: string };
export type RecordValues = { A: string[]; AAAA: string[]; CNAME: string[]; TXT: string[]; MX: MxValue[] };
export type RecordType = keyof RecordValues;
export type DnsQuery = { name: string; type: string };

export type DnsServer = {
  port: number;
  /** `127.0.0.1:<port>`, the form `Resolver.setServers` takes. */
  server: string;
  /** Every question received, in order, for asserting that a lookup happened (or did not). */
  queries: DnsQuery[];
  /** Replaces the records of one type at a name. TXT values longer than 255 bytes are split. */
  set<T extends RecordType>(name: string, type: T, values: RecordValues[T]): void;
  remove(name: string, type?: RecordType): void;
  /** Holds every answer back this long, so that resolvers with a shorter timeout give up. */
  setDelay(ms: number): void;
  /** The most answers held back by `setDelay` at one time: how many questions a client had in flight. */
  readonly peakPending: number;
  /** TTL (seconds) of every answer record from now on; default 0. */
  setTtl(seconds: number): void;
  /** NXDOMAIN/NODATA answers carry an SOA whose TTL and MINIMUM are this (RFC 2308); null: no SOA (default). */
  setNegativeTtl(seconds: number | null): void;
  /** Answer questions for this name with this rcode (e.g. "SERVFAIL"); null: answer normally again. */
  setFailure(name: string, rcode: "SERVFAIL" | "REFUSED" | null): void;
  close(): Promise<void>;
};

type Zone = Map<string, Map<RecordType, RecordValues[RecordType]>>;

const TYPE_NAMES = new Map<number, string>(Object.entries(Packet.TYPE).map(([k, v]) => [v, k]));
const NXDOMAIN = 3;
const MAX_CNAME_CHAIN = 8;

/** What the server answers from: the zone and the answer settings a test changes, and the questions asked. */
type Authority = {
  zone: Zone;
  queries: DnsQuery[];
  /** rcode per normalized name (2 SERVFAIL, 5 REFUSED). */
  failures: Map<string, number>;
  ttl: number;
  negativeTtl: number | null;
};

function setRecords<T extends RecordType>(zone: Zone, name: string, type: T, values: RecordValues[T]): void {
  for (const v of values) validate(type, v);
  const key = normalize(name);
  const types = zone.get(key) ?? new Map();
  types.set(type, values);
  zone.set(key, types);
}

/** The wire answer to one request, truncated to fit `maxBytes`; null when the request does not parse. */
function answer(auth: Authority, request: Buffer, maxBytes: number): Buffer | null {
  const req = safeParse(request);
  if (!req) return null;
  const res = Packet.createResponseFromRequest(req);
  res.header.aa = 1;
  res.header.ra = 0;
  const [q] = req.questions;
  if (q) {
    const type = TYPE_NAMES.get(q.type) ?? String(q.type);
    auth.queries.push({ name: q.name, type });
    const failure = auth.failures.get(normalize(q.name));
    const found = failure ? [] : lookup(auth.zone, q.name, type);
    if (failure) res.header.rcode = failure;
    else if (found === null) res.header.rcode = NXDOMAIN;
    else res.answers = found.map((r) => ({ ...r, ttl: auth.ttl }));
    if (!failure && !res.answers.length && auth.negativeTtl !== null) {
      res.authorities = [soa(q.name, auth.negativeTtl)];
    }
  }
  let buf = res.toBuffer();
  if (buf.length > maxBytes) {
    // Too big for this transport: RFC 1035 truncation, the client retries over TCP.
    res.header.tc = 1;
    res.answers = [];
    buf = res.toBuffer();
  }
  return buf;
}

/** Holds answers back for `setDelay`, counting the most held at one time (`peakPending`). */
function delayLine() {
  const timers = new Set<NodeJS.Timeout>();
  let delayMs = 0;
  let pending = 0;
  let peakPending = 0;
  return {
    setDelay(ms: number) {
      delayMs = ms;
    },
    get peakPending() {
      return peakPending;
    },
    later(fn: () => void) {
      if (delayMs <= 0) return fn();
      peakPending = Math.max(peakPending, ++pending);
      const t = setTimeout(() => {
        timers.delete(t);
        pending--;
        fn();
      }, delayMs);
      timers.add(t);
    },
    clear() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}

/** UDP and TCP on one port, each answering with `respond(request, maxBytes)` after `later`. */
function listen(respond: (request: Buffer, maxBytes: number) => Buffer | null, later: (fn: () => void) => void) {
  return bindPair(
    (msg, rinfo, sock) => {
      // With an EDNS OPT record the client accepts more than 512 bytes; dns2 does not decode the
      // advertised size, so assume the usual 1232 (what c-ares advertises).
      const edns = safeParse(msg)?.additionals.some((r) => r.type === Packet.TYPE.EDNS) ?? false;
      const out = respond(msg, edns ? 1232 : 512);
      if (out) later(() => sock.send(out, rinfo.port, rinfo.address));
    },
    (msg, socket) => {
      const out = respond(msg, 65535);
      if (!out) return socket.destroy();
      const len = Buffer.alloc(2);
      len.writeUInt16BE(out.length);
      later(() => {
        if (!socket.destroyed) socket.write(Buffer.concat([len, out]));
      });
    },
  );
}

export async function startDnsServer(records: Partial<Record<string, Partial<RecordValues>>> = {}): Promise<DnsServer> {
  const auth: Authority = { zone: new Map(), queries: [], failures: new Map(), ttl: 0, negativeTtl: null };
  for (const [name, byType] of Object.entries(records)) {
    for (const [type, values] of Object.entries(byType ?? {})) setRecords(auth.zone, name, type as RecordType, values);
  }
  const delay = delayLine();
  const { udp, tcp, port, sockets } = await listen((msg, maxBytes) => answer(auth, msg, maxBytes), delay.later);

  return {
    port,
    server: `127.0.0.1:${port}`,
    queries: auth.queries,
    set: (name, type, values) => setRecords(auth.zone, name, type, values),
    remove(name, type) {
      const key = normalize(name);
      if (!type) auth.zone.delete(key);
      else auth.zone.get(key)?.delete(type);
    },
    setDelay: delay.setDelay,
    get peakPending() {
      return delay.peakPending;
    },
    setTtl(seconds) {
      auth.ttl = seconds;
    },
    setNegativeTtl(seconds) {
      auth.negativeTtl = seconds;
    },
    setFailure(name, rcode) {
      if (rcode === null) auth.failures.delete(normalize(name));
      else auth.failures.set(normalize(name), rcode === "SERVFAIL" ? 2 : 5);
    },
    async close() {
      delay.clear();
      await Promise.all([
        new Promise<void>((resolve) => udp.close(() => resolve())),
        new Promise<void>((resolve) => {
          tcp.close(() => resolve());
          for (const s of sockets) s.destroy();
        }),
      ]);
    },
  };
}

/** Answers for one question; null means NXDOMAIN. CNAMEs are followed inside the zone. */
function lookup(zone: Zone, qname: string, type: string): DnsResource[] | null {
  const out: DnsResource[] = [];
  let name = qname;
  for (let hop = 0; hop < MAX_CNAME_CHAIN; hop++) {
    const types = zone.get(normalize(name));
    if (!types) {
      if (hop > 0) return out; // dangling CNAME target outside the zone
      return hasChildren(zone, normalize(name)) ? [] : null; // empty non-terminal → NODATA
    }
    const cname = types.get("CNAME") as string[] | undefined;
    if (cname?.[0] && type !== "CNAME") {
      out.push(resource(name, "CNAME", cname[0]));
      name = cname[0];
      continue;
    }
    const values = type === "ANY" ? [...types.entries()] : [[type, types.get(type as RecordType) ?? []] as const];
    for (const [t, vs] of values) for (const v of vs) out.push(resource(name, t as RecordType, v));
    return out;
  }
  return out;
}

/** The SOA of the question's parent, as an authority would send with a negative answer. */
function soa(qname: string, ttl: number): DnsResource {
  const parent = normalize(qname).split(".").slice(1).join(".") || "test";
  return {
    name: parent,
    type: Packet.TYPE.SOA,
    class: Packet.CLASS.IN,
    ttl,
    ...({
      primary: `ns.${parent}`,
      admin: `hostmaster.${parent}`,
      serial: 1,
      refresh: 3600,
      retry: 600,
      expiration: 86400,
      minimum: ttl,
    } as object),
  };
}

function resource(name: string, type: RecordType, value: string | MxValue): DnsResource {
  const base = { name, type: Packet.TYPE[type], class: Packet.CLASS.IN, ttl: 0 };
  switch (type) {
    case "A":
      return { ...base, address: value as string };
    case "AAAA":
      // dns2's encoder only understands plain hex groups; the URL parser gives the canonical form.
      return { ...base, address: new URL(`http://[${value as string}]`).hostname.slice(1, -1) };
    case "CNAME":
      return { ...base, domain: value as string };
    case "MX":
      return { ...base, ...(value as MxValue) };
    case "TXT":
      return { ...base, data: chunks(value as string) };
  }
}

/**
 * A TXT character-string holds at most 255 bytes; longer records are sent as several strings, which
 * resolvers hand back as chunks (mailauth joins them). Splits fall between characters, not inside one.
 */
function chunks(text: string): string[] {
  const out: string[] = [];
  let current = "";
  let bytes = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch);
    if (bytes + size > 255) {
      out.push(current);
      current = "";
      bytes = 0;
    }
    current += ch;
    bytes += size;
  }
  out.push(current);
  return out;
}

function validate(type: RecordType, value: string | MxValue): void {
  const ok =
    type === "A"
      ? net.isIPv4(value as string)
      : type === "AAAA"
        ? net.isIPv6(value as string)
        : type === "MX"
          ? typeof value === "object" && Number.isInteger(value.priority) && value.exchange.length > 0
          : typeof value === "string";
  if (!ok) throw new Error(`dns-server: bad ${type} value ${JSON.stringify(value)}`);
}

function normalize(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

function hasChildren(zone: Zone, name: string): boolean {
  for (const key of zone.keys()) if (key.endsWith(`.${name}`)) return true;
  return false;
}

function safeParse(msg: Buffer): DnsPacket | null {
  try {
    return Packet.parse(msg);
  } catch {
    return null;
  }
}

/** Binds UDP on an ephemeral port, then TCP on the same port (retrying if another process has it). */
async function bindPair(
  onUdp: (msg: Buffer, rinfo: dgram.RemoteInfo, sock: dgram.Socket) => void,
  onTcp: (msg: Buffer, socket: net.Socket) => void,
): Promise<{ udp: dgram.Socket; tcp: net.Server; port: number; sockets: Set<net.Socket> }> {
  for (let attempt = 0; ; attempt++) {
    const udp = dgram.createSocket("udp4");
    udp.on("message", (msg, rinfo) => onUdp(msg, rinfo, udp));
    await new Promise<void>((resolve, reject) => {
      udp.once("error", reject);
      udp.bind(0, "127.0.0.1", () => resolve());
    });
    const { port } = udp.address();
    const sockets = new Set<net.Socket>();
    const tcp = net.createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => socket.destroy());
      let buf = Buffer.alloc(0);
      socket.on("data", (data: Buffer) => {
        buf = Buffer.concat([buf, data]);
        // Messages are length-prefixed; a client may send several on one connection.
        while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          const len = buf.readUInt16BE(0);
          onTcp(buf.subarray(2, 2 + len), socket);
          buf = buf.subarray(2 + len);
        }
      });
    });
    const listening = await new Promise<boolean>((resolve) => {
      tcp.once("error", () => resolve(false));
      tcp.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (listening) return { udp, tcp, port, sockets };
    await new Promise<void>((resolve) => udp.close(() => resolve()));
    if (attempt >= 20) throw new Error("dns-server: no port free for both UDP and TCP");
  }
}
