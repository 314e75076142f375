// dns2@2.1.0 ships no types. Only the wire codec (Packet) is declared: the test DNS server owns its
// sockets so that it can speak UDP and TCP on one port and set the truncation bit itself.
declare module "dns2" {
  export type DnsQuestion = { name: string; type: number; class: number };

  export type DnsResource = {
    name: string;
    type: number;
    class: number;
    ttl: number;
    address?: string;
    domain?: string;
    exchange?: string;
    priority?: number;
    data?: string | string[];
  };

  export type DnsHeader = {
    id: number;
    qr: number;
    opcode: number;
    aa: number;
    tc: number;
    rd: number;
    ra: number;
    rcode: number;
  };

  export class Packet {
    header: DnsHeader;
    questions: DnsQuestion[];
    answers: DnsResource[];
    authorities: DnsResource[];
    additionals: DnsResource[];
    toBuffer(): Buffer;
    static parse(buffer: Buffer): Packet;
    static createResponseFromRequest(request: Packet): Packet;
    static TYPE: Record<"A" | "NS" | "CNAME" | "SOA" | "PTR" | "MX" | "TXT" | "AAAA" | "SRV" | "EDNS" | "ANY", number>;
    static CLASS: Record<"IN" | "ANY", number>;
  }

  const dns2: { Packet: typeof Packet };
  export default dns2;
}
