// Every deployment the repository ships runs every service under services/, and every Kubernetes
// object in them — kustomize manifests and the rendered Helm chart — validates against the
// Kubernetes schemas (kubernetes-models; KEDA's for ScaledObject). Offline: a real `helm template`.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "@jest/globals";
import { parse } from "yaml";
import {
  type ComposeService,
  composeServices,
  deployedServices,
  deploymentOf,
  type K8sObject,
  kustomizeObjects,
  lintChart,
  renderChart,
  repoServices,
  root,
  schemaProblems,
  serviceOfCommand,
} from "./deploy/manifests.ts";

const services = repoServices();
const secret = { existingSecret: "mailroom-secrets" };
const withKeda = { ...secret, "keda.enabled": "true", "keda.prometheus.serverAddress": "http://prometheus:9090" };
/** KEDA on Redis lists: the dispatcher only (the inbound queue's jobs wait in a sorted set). */
const withKedaRedis = {
  ...secret,
  "keda.enabled": "true",
  "keda.source": "redis",
  "keda.redis.passwordKey": "REDIS_PASSWORD",
  "services.rule-engine.autoscaling.enabled": "false",
};

const missingFrom = (deployed: string[]) => services.filter((s) => !deployed.includes(s));
const byKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const component = (o: K8sObject) => o.metadata.labels?.["app.kubernetes.io/component"];

test("the repository has the six services the deployments are checked against", () => {
  expect(services).toEqual([
    "api",
    "domain-verifier",
    "outbound-sender",
    "rule-engine",
    "smtp-ingest",
    "webhook-dispatcher",
  ]);
});

test("the schema check rejects what the API server would: a wrong type, a missing field, an unknown kind", () => {
  const bad = (spec: unknown, kind = "Deployment", apiVersion = "apps/v1") =>
    schemaProblems({ apiVersion, kind, metadata: { name: "x" }, spec });
  const selector = { matchLabels: { a: "b" } };
  const template = { metadata: { labels: { a: "b" } }, spec: { containers: [{ name: "c", image: "i" }] } };
  expect(bad({ selector, template })).toEqual([]);
  expect(bad({ selector, template, replicas: "two" })).not.toEqual([]);
  expect(bad({ selector })).not.toEqual([]);
  expect(bad({}, "Widget", "example.com/v1")).toEqual(["Widget x: no schema for example.com/v1/Widget"]);
});

test("every deployment starts compiled entry points the build emits (node <file>.js, no tsx)", () => {
  const commands = [
    ...Object.values(composeServices()).map((s) => s.command ?? []),
    ...[...kustomizeObjects(), ...renderChart(secret)]
      .filter((o) => o.kind === "Deployment" || o.kind === "Job")
      .flatMap((o) => [...(o.spec.template.spec.initContainers ?? []), ...o.spec.template.spec.containers])
      .map((c) => c as { command?: string[]; args?: string[] })
      .map((c) => [...(c.command ?? []), ...(c.args ?? [])]),
  ].filter((argv) => argv[0] === "node" || argv.includes("tsx"));
  expect(commands.length).toBeGreaterThan(12);
  for (const argv of commands) {
    expect(argv).not.toContain("tsx");
    const entry = argv.find((a) => a.endsWith(".js")) ?? "";
    // scripts/build.mjs compiles <path>.ts to <path>.js under the same path.
    expect([entry, existsSync(join(root, entry.replace(/\.js$/, ".ts")))]).toEqual([entry, true]);
  }
});

test("the Dockerfile's base image is pinned to the Node release the scripts use and a Debian release", () => {
  const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
  const image = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1];
  const node = /MAILROOM_NODE_VERSION:-(\d+\.\d+\.\d+)/.exec(
    readFileSync(join(root, "scripts/ensure-node.sh"), "utf8"),
  )?.[1];
  expect(image).toBe(`node:${node}-bookworm-slim`);
  // Both stages build FROM it; nothing else floats.
  const base = "$" + "{NODE_IMAGE}"; // the Dockerfile's own ARG reference, literally
  expect(dockerfile.match(/^FROM .*$/gm)).toEqual([`FROM ${base} AS build`, `FROM ${base} AS runtime`]);
});

describe("docker-compose.yml", () => {
  const compose = composeServices();
  const started = Object.values(compose)
    .map((s) => serviceOfCommand(s.command ?? []))
    .filter((s): s is string => s !== null)
    .sort();

  test("runs every service", () => {
    expect(missingFrom(started)).toEqual([]);
  });

  test("every service gets the database, Redis and the migration before it starts", () => {
    for (const [name, svc] of Object.entries(compose)) {
      if (!serviceOfCommand(svc.command ?? [])) continue;
      expect([name, svc.environment?.DATABASE_URL, svc.environment?.REDIS_URL].every(Boolean)).toBe(true);
      expect((svc as { depends_on?: Record<string, unknown> }).depends_on).toHaveProperty("migrate");
    }
    expect(compose["outbound-sender"]?.environment?.SMTP_RELAY_URL).toBeTruthy();
  });

  test("an optional clamd (profile clamav) the rule engine reaches when CLAMD_URL is set", () => {
    const clamd = compose.clamd as ComposeService & { profiles?: string[] };
    expect(clamd?.profiles).toEqual(["clamav"]);
    expect(clamd?.environment?.CLAMD_CONF_StreamMaxLength).toBe("30M");
    // Compose's `${NAME:-}`: the shell's value, or empty (off).
    const fromShell = (name: string) => `$\{${name}:-}`;
    expect(compose["rule-engine"]?.environment).toMatchObject({
      CLAMD_URL: fromShell("CLAMD_URL"),
      ARC_TRUSTED_SEALERS: fromShell("ARC_TRUSTED_SEALERS"),
    });
  });
});

describe("infra/k8s (kustomize)", () => {
  const objects = kustomizeObjects();

  test("runs every service", () => {
    expect(missingFrom(deployedServices(objects))).toEqual([]);
  });

  test("every object validates against the Kubernetes schemas", () => {
    expect(objects.flatMap(schemaProblems)).toEqual([]);
  });

  test("every service is probed on HEALTH_PORT, and the SMTP Service keeps the client's address", () => {
    const config = objects.find((o) => o.kind === "ConfigMap");
    expect(config?.data).toMatchObject({ HEALTH_PORT: "9464" });
    for (const service of services) {
      const [c] = deploymentOf(objects, service)?.spec.template.spec.containers ?? [];
      expect(c.ports).toContainEqual({ name: "health", containerPort: 9464 });
      expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "health" });
      expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "health" });
    }
    const smtp = byKind(objects, "Service").find((s) => s.spec.selector.app === "smtp-ingest");
    expect(smtp?.spec).toMatchObject({ type: "LoadBalancer", externalTrafficPolicy: "Local" });
  });

  test("every pod runs as the chart's: non-root, seccomp RuntimeDefault, no capabilities, read-only root", () => {
    const values = parse(readFileSync(join(root, "infra/helm/mailroom/values.yaml"), "utf8")) as {
      podSecurityContext: unknown;
      containerSecurityContext: unknown;
    };
    const pods = objects.filter((o) => o.kind === "Deployment" || o.kind === "Job");
    expect(pods).toHaveLength(services.length + 1);
    for (const o of pods) {
      const pod = o.spec.template.spec;
      expect([o.metadata.name, pod.securityContext]).toEqual([o.metadata.name, values.podSecurityContext]);
      for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
        expect([o.metadata.name, c.name, c.securityContext]).toEqual([
          o.metadata.name,
          c.name,
          values.containerSecurityContext,
        ]);
      }
      // A read-only root: Node's temporary files go to an emptyDir.
      for (const c of pod.containers) expect(c.volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
      expect(pod.volumes).toContainEqual({ name: "tmp", emptyDir: {} });
    }
  });

  test("every service waits for the schema in an init container (nothing orders the migrate Job first)", () => {
    expect(waitsForSchema(objects)).toEqual(services);
  });
});

/** The services whose pods first run wait-schema-cli with the database secret. */
function waitsForSchema(objects: K8sObject[]): string[] {
  return services.filter((service) => {
    const init = (deploymentOf(objects, service)?.spec.template.spec.initContainers ?? []) as {
      command?: string[];
      args?: string[];
      envFrom?: unknown[];
    }[];
    return init.some(
      (c) =>
        [...(c.command ?? []), ...(c.args ?? [])].join(" ") === "node packages/db/src/wait-schema-cli.js" &&
        c.envFrom?.some((e) => JSON.stringify(e).includes("mailroom-secrets")),
    );
  });
}

describe("Helm chart infra/helm/mailroom", () => {
  const objects = renderChart(secret);

  test("helm lint --strict passes", () => {
    expect(lintChart(secret)).toMatch(/0 chart\(s\) failed/);
  });

  test("one Deployment per service", () => {
    expect(deployedServices(objects)).toEqual(services);
  });

  test("every object validates against the Kubernetes schemas, with and without KEDA", () => {
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    expect(renderChart(withKeda).flatMap(schemaProblems)).toEqual([]);
    expect(renderChart(withKedaRedis).flatMap(schemaProblems)).toEqual([]);
  });

  test("every Deployment has resources, reads the secret by reference, and selects its own pods", () => {
    for (const d of byKind(objects, "Deployment")) {
      const [c] = d.spec.template.spec.containers;
      expect(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory).toBeTruthy();
      expect(c.envFrom).toContainEqual({ secretRef: { name: "mailroom-secrets" } });
      expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
      expect(d.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    }
    expect(byKind(objects, "Secret")).toEqual([]); // nothing secret is written by the chart
  });

  test("every service is probed on its HEALTH_PORT (/readyz, /healthz) and scraped there for /metrics", () => {
    for (const service of services) {
      const d = deploymentOf(objects, service);
      const [c] = d?.spec.template.spec.containers ?? [];
      expect(c.env).toContainEqual({ name: "HEALTH_PORT", value: "9464" });
      expect(c.ports).toContainEqual({ name: "health", containerPort: 9464, protocol: "TCP" });
      expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "health" });
      expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "health" });
      expect(d?.spec.template.metadata.annotations).toMatchObject({
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9464",
        "prometheus.io/path": "/metrics",
      });
    }
  });

  test("without a health port a service falls back to the probes in its values", () => {
    const rendered = renderChart({ ...secret, "services.smtp-ingest.health.port": "null" });
    const [smtp] = deploymentOf(rendered, "smtp-ingest")?.spec.template.spec.containers ?? [];
    expect(smtp.readinessProbe.tcpSocket).toEqual({ port: "smtp" });
    expect(smtp.env).not.toContainEqual(expect.objectContaining({ name: "HEALTH_PORT" }));
  });

  test("every service waits for the schema in an init container, unless turned off", () => {
    expect(waitsForSchema(objects)).toEqual(services);
    expect(waitsForSchema(renderChart({ ...secret, "waitForSchema.enabled": "false" }))).toEqual([]);
  });

  test("the migration is a hook Job re-created on every install and upgrade", () => {
    const [job] = byKind(objects, "Job");
    expect(job?.metadata.annotations?.["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
    expect(job?.metadata.annotations?.["helm.sh/hook-delete-policy"]).toContain("before-hook-creation");
    expect(serviceOfCommand(job?.spec.template.spec.containers[0].args)).toBe(null);
    expect(job?.spec.template.spec.containers[0].args.join(" ")).toMatch(/migrate/);
    // The name docs/operations.md gives for `kubectl logs job/…`.
    expect(job?.metadata.name).toBe("mr-mailroom-migrate");
    expect(byKind(renderChart(secret, "mailroom"), "Job")[0]?.metadata.name).toBe("mailroom-migrate");
  });

  test("the SMTP Service keeps the client's address (externalTrafficPolicy Local)", () => {
    const smtp = byKind(objects, "Service").find((s) => component(s) === "smtp-ingest");
    expect(smtp?.spec).toMatchObject({ type: "LoadBalancer", externalTrafficPolicy: "Local" });
    expect(smtp?.spec.ports).toEqual([{ name: "smtp", port: 25, targetPort: "smtp", protocol: "TCP" }]);
  });

  test("PodDisruptionBudgets cover every service that runs more than one pod", () => {
    const covered = byKind(objects, "PodDisruptionBudget").map(component).sort();
    expect(covered).toEqual(services.filter((s) => s !== "domain-verifier"));
  });

  test("API and SMTP ingest scale on CPU; the Deployment leaves replicas to the autoscaler", () => {
    const hpas = byKind(objects, "HorizontalPodAutoscaler");
    expect(hpas.map(component).sort()).toEqual(["api", "smtp-ingest"]);
    for (const hpa of hpas) {
      expect(hpa.spec.metrics[0].resource.name).toBe("cpu");
      expect(deploymentOf(objects, component(hpa) ?? "")?.spec.replicas).toBeUndefined();
    }
    expect(byKind(objects, "ScaledObject")).toEqual([]); // KEDA is optional and off by default
    expect(deploymentOf(objects, "rule-engine")?.spec.replicas).toBe(2);
  });

  test("with KEDA, rule engine and dispatcher scale on their waiting jobs from Prometheus, on any Redis", () => {
    const rendered = renderChart(withKeda);
    const scaled = byKind(rendered, "ScaledObject");
    expect(scaled.map(component).sort()).toEqual(["rule-engine", "webhook-dispatcher"]);
    for (const s of scaled) {
      const [trigger] = s.spec.triggers;
      const queue = component(s) === "rule-engine" ? "inbound" : "delivery";
      expect(trigger).toEqual({
        type: "prometheus",
        metadata: {
          serverAddress: "http://prometheus:9090",
          // Every service reports every queue: the max over reporters, summed over the waiting states.
          query: `sum(max by (state) (mailroom_queue_jobs{queue="${queue}",state=~"waiting|prioritized"}))`,
          threshold: queue === "inbound" ? "100" : "200",
        },
      });
      expect(deploymentOf(rendered, component(s) ?? "")?.metadata.name).toBe(s.spec.scaleTargetRef.name);
      expect(deploymentOf(rendered, component(s) ?? "")?.spec.replicas).toBeUndefined();
    }
    expect(byKind(rendered, "TriggerAuthentication")).toEqual([]);
    expect(() => renderChart({ ...secret, "keda.enabled": "true" })).toThrow(/needs keda\.prometheus\.serverAddress/);
  });

  test("with KEDA on Redis, the dispatcher scales on its BullMQ wait list; the inbound queue is refused, saying why", () => {
    const rendered = renderChart({ ...withKedaRedis, "config.REDIS_PREFIX": "mr1" });
    const [scaled, ...others] = byKind(rendered, "ScaledObject");
    expect(others).toEqual([]);
    expect(component(scaled as K8sObject)).toBe("webhook-dispatcher");
    expect(scaled?.spec.triggers[0]).toMatchObject({
      type: "redis",
      metadata: { address: "redis:6379", listName: "mr1:delivery:wait", listLength: "200" },
      authenticationRef: { name: "mr-mailroom-redis" },
    });
    const [auth] = byKind(rendered, "TriggerAuthentication");
    expect(auth?.spec.secretTargetRef).toEqual([
      { parameter: "password", name: "mailroom-secrets", key: "REDIS_PASSWORD" },
    ]);
    expect(() => renderChart({ ...withKedaRedis, "services.rule-engine.autoscaling.enabled": "true" })).toThrow(
      /keda\.source=redis cannot scale rule-engine: the inbound queue's jobs wait with priorities/,
    );
  });

  test("with KEDA on a Redis Cluster, the trigger is redis-cluster on the queue's hash-tagged key", () => {
    const rendered = renderChart({
      ...withKedaRedis,
      "keda.redis.cluster": "true",
      "keda.redis.address": "redis-0:6379\\,redis-1:6379",
    });
    const [scaled] = byKind(rendered, "ScaledObject");
    expect(scaled?.spec.triggers[0]).toMatchObject({
      type: "redis-cluster",
      metadata: { addresses: "redis-0:6379,redis-1:6379", listName: "mailroom:{delivery}:delivery:wait" },
    });
    expect(rendered.flatMap(schemaProblems)).toEqual([]);
  });

  test("prometheusRule.enabled renders infra/prometheus/alerts.yml as a PrometheusRule, with the operator's labels", () => {
    expect(byKind(objects, "PrometheusRule")).toEqual([]); // needs the operator's CRDs: off by default
    const rendered = renderChart({
      ...secret,
      "prometheusRule.enabled": "true",
      "prometheusRule.labels.release": "kps",
    });
    const [rule] = byKind(rendered, "PrometheusRule");
    expect(rule?.metadata.labels).toMatchObject({ release: "kps", "app.kubernetes.io/instance": "mr" });
    expect(rule?.spec).toEqual(parse(readFileSync(join(root, "infra/prometheus/alerts.yml"), "utf8")));
    expect(rendered.flatMap(schemaProblems)).toEqual([]);
  });

  test("clamav.enabled adds a clamd Deployment and Service, and points the rule engine at it", () => {
    expect(objects.filter((o) => component(o) === "clamd")).toEqual([]); // optional, off by default
    const withClamd = { ...secret, "clamav.enabled": "true" };
    const rendered = renderChart(withClamd);
    expect(rendered.flatMap(schemaProblems)).toEqual([]);
    expect(lintChart(withClamd)).toMatch(/0 chart\(s\) failed/);
    const clamd = byKind(rendered, "Deployment").find((d) => component(d) === "clamd");
    const [c] = clamd?.spec.template.spec.containers ?? [];
    expect(c.env).toContainEqual({ name: "CLAMD_CONF_StreamMaxLength", value: "30M" });
    expect(c.readinessProbe.tcpSocket).toEqual({ port: "clamd" });
    expect(c.resources.limits.memory).toBeTruthy();
    const svc = byKind(rendered, "Service").find((s) => component(s) === "clamd");
    expect(svc?.spec.ports).toEqual([{ name: "clamd", port: 3310, targetPort: "clamd", protocol: "TCP" }]);
    const config = byKind(rendered, "ConfigMap")[0];
    expect((config?.data as Record<string, string> | undefined)?.CLAMD_URL).toBe(`tcp://${svc?.metadata.name}:3310`);
    // The ConfigMap changed, so every service's pods roll (the checksum covers the rendered ConfigMap).
    const checksum = (objs: K8sObject[]) =>
      deploymentOf(objs, "rule-engine")?.spec.template.metadata.annotations["checksum/config"];
    expect(checksum(rendered)).not.toBe(checksum(objects));
    // A CLAMD_URL of the operator's own wins.
    const own = renderChart({ ...withClamd, "config.CLAMD_URL": "tcp://clamd.other:3310" });
    expect((byKind(own, "ConfigMap")[0]?.data as Record<string, string> | undefined)?.CLAMD_URL).toBe(
      "tcp://clamd.other:3310",
    );
  });

  test("without a secret reference the chart refuses to render, saying what to set", () => {
    expect(() => renderChart()).toThrow(/set existingSecret to the name of a Secret/);
  });
});

/**
 * The drain (open SMTP transactions, running jobs: SHUTDOWN_TIMEOUT_MS) must end before the
 * orchestrator's SIGKILL, or a rolling restart cuts what the drain was finishing.
 */
describe("grace periods outlast SHUTDOWN_TIMEOUT_MS", () => {
  const durationS = (d: string) => {
    const m = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(d);
    return Number(m?.[1] ?? 0) * 60 + Number(m?.[2] ?? 0);
  };
  const k8sBudgets = (objects: K8sObject[]) =>
    services.map((service) => {
      const spec = deploymentOf(objects, service)?.spec.template.spec;
      const env = (spec?.containers[0]?.env ?? []) as { name: string; value: string }[];
      const shutdownMs = Number(env.find((e) => e.name === "SHUTDOWN_TIMEOUT_MS")?.value);
      return { service, graceMs: Number(spec?.terminationGracePeriodSeconds ?? 30) * 1000, shutdownMs };
    });
  const short = (b: { graceMs: number; shutdownMs: number }) => !(b.shutdownMs > 0 && b.graceMs > b.shutdownMs);

  test("Helm chart: SHUTDOWN_TIMEOUT_MS is set 5 s inside each service's terminationGracePeriodSeconds", () => {
    const budgets = k8sBudgets(renderChart(secret));
    expect(budgets.filter(short)).toEqual([]);
    expect(budgets.find((b) => b.service === "smtp-ingest")).toMatchObject({ graceMs: 60_000, shutdownMs: 55_000 });
    const longer = k8sBudgets(renderChart({ ...secret, "services.rule-engine.terminationGracePeriodSeconds": "120" }));
    expect(longer.find((b) => b.service === "rule-engine")).toMatchObject({ graceMs: 120_000, shutdownMs: 115_000 });
  });

  test("infra/k8s: the same for every Deployment", () => {
    expect(k8sBudgets(kustomizeObjects()).filter(short)).toEqual([]);
  });

  test("docker-compose.yml: stop_grace_period above each service's SHUTDOWN_TIMEOUT_MS", () => {
    const compose = composeServices() as Record<string, ComposeService & { stop_grace_period?: string }>;
    const budgets = Object.entries(compose)
      .filter(([, svc]) => serviceOfCommand(svc.command ?? []) && !svc.command?.some((a) => a.includes("migrate")))
      .map(([service, svc]) => ({
        service,
        graceMs: durationS(svc.stop_grace_period ?? "10s") * 1000,
        shutdownMs: Number(svc.environment?.SHUTDOWN_TIMEOUT_MS),
      }));
    expect(budgets.length).toBe(services.length);
    expect(budgets.filter(short)).toEqual([]);
  });
});
