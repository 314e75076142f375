// Replicas of smtp-ingest, rule-engine and webhook-dispatcher as real processes (main.ts, configured
// by environment), and a rolling restart as Kubernetes does one (maxSurge 1, maxUnavailable 0): a
// new replica starts and becomes ready, then an old one leaves the rotation and gets SIGTERM.
import { sparePort } from "@mailroom/testing";
import { type ServiceProcess, startService, stopService, waitReady } from "../service-processes.ts";

export const FLEET_SERVICES = ["smtp-ingest", "rule-engine", "webhook-dispatcher"] as const;
export type FleetService = (typeof FLEET_SERVICES)[number];

export type Replica = { service: FleetService; proc: ServiceProcess; smtpPort?: number; inRotation: boolean };

export type FleetOptions = {
  /** DATABASE_URL, REDIS_URL, REDIS_PREFIX, DNS_SERVERS… for every process. */
  env: Record<string, string>;
  replicas: Record<FleetService, number>;
  /** Per service, on top of `env`. */
  serviceEnv?: Partial<Record<FleetService, Record<string, string>>>;
  /** How long a replica may take to become ready (default 180 s; a busy machine boots slowly). */
  readyTimeoutMs?: number;
};

export type Stopped = {
  name: string;
  pid: number;
  code: number | null;
  signalledAt: number;
  exitedAt: number;
  /** Jobs its drain handed back to the queue (its log line), 0 when all finished in time. */
  handedBack: number;
};

export type Fleet = {
  replicas: Replica[];
  /** The SMTP ports in the load balancer's rotation. */
  smtpPorts(): number[];
  /** Every replica of `service` replaced in turn; `beforeStop` runs once the old one left the rotation. */
  roll(service: FleetService, beforeStop?: (old: Replica) => Promise<void>): Promise<Stopped[]>;
  stopped: Stopped[];
  /** SIGKILLs whatever still runs (after a test; the roll itself uses SIGTERM). */
  close(): Promise<void>;
};

async function startReplica(o: FleetOptions, service: FleetService): Promise<Replica> {
  const smtpPort = service === "smtp-ingest" ? await sparePort() : undefined;
  const proc = await startService(service, {
    ...o.env,
    ...o.serviceEnv?.[service],
    ...(smtpPort ? { SMTP_HOST: "127.0.0.1", SMTP_PORT: String(smtpPort) } : {}),
  });
  return { service, proc, ...(smtpPort ? { smtpPort } : {}), inRotation: false };
}

/** SIGTERM, and what it exited with. */
async function terminate(r: Replica): Promise<Stopped> {
  const exited = r.proc.exited();
  const signalledAt = Date.now();
  r.proc.child.kill("SIGTERM");
  const code = await exited;
  const handedBack = r.proc
    .stdout()
    .split("\n")
    .filter((l) => l.includes("handed back to the queue"))
    .reduce((sum, l) => sum + Number(/"handedBack":(\d+)/.exec(l)?.[1] ?? 0), 0);
  return { name: r.service, pid: r.proc.child.pid ?? 0, code, signalledAt, exitedAt: Date.now(), handedBack };
}

export async function startFleet(o: FleetOptions): Promise<Fleet> {
  const replicas: Replica[] = [];
  const stopped: Stopped[] = [];
  const add = async (service: FleetService) => {
    const r = await startReplica(o, service);
    replicas.push(r);
    await waitReady(r.proc, o.readyTimeoutMs ?? 180_000);
    r.inRotation = true;
    return r;
  };
  try {
    await Promise.all(FLEET_SERVICES.flatMap((s) => Array.from({ length: o.replicas[s] }, () => add(s))));
  } catch (err) {
    // One that never became ready: the others must not outlive the caller.
    await Promise.all(replicas.splice(0).map((r) => stopService(r.proc)));
    throw err;
  }
  return {
    replicas,
    stopped,
    smtpPorts: () => replicas.flatMap((r) => (r.inRotation && r.smtpPort ? [r.smtpPort] : [])),
    async roll(service, beforeStop) {
      const olds = replicas.filter((r) => r.service === service && r.inRotation);
      const mine: Stopped[] = [];
      for (const old of olds) {
        await add(service);
        old.inRotation = false;
        await beforeStop?.(old);
        const s = await terminate(old);
        replicas.splice(replicas.indexOf(old), 1);
        stopped.push(s);
        mine.push(s);
      }
      return mine;
    },
    async close() {
      await Promise.all(replicas.splice(0).map((r) => stopService(r.proc)));
    },
  };
}
