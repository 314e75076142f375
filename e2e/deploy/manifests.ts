// Reads every deployment the repository ships — docker-compose.yml, the kustomize manifests in
// infra/k8s and the Helm chart in infra/helm/mailroom rendered by a real `helm template` — so tests
// can check that each one runs every service and that every object is a valid Kubernetes object.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as keda from "@kubernetes-models/keda";
import * as prometheusOperator from "@kubernetes-models/prometheus-operator";
import * as k8s from "kubernetes-models";
import { parse, parseAllDocuments } from "yaml";

import { repoRoot as root } from "../services.ts";

export { root };
export const chartDir = join(root, "infra/helm/mailroom");

export { repoServices } from "../services.ts";

/** The service a command line starts, from its entry point path (services/<name>/…), or null. */
export function serviceOfCommand(argv: readonly unknown[]): string | null {
  for (const arg of argv) {
    const m = typeof arg === "string" ? /(?:^|\/)services\/([a-z0-9-]+)\//.exec(arg) : null;
    if (m?.[1]) return m[1];
  }
  return null;
}

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: any;
  [key: string]: unknown;
};

function parseDocs(text: string, source: string): K8sObject[] {
  return parseAllDocuments(text).flatMap((doc) => {
    if (doc.errors.length) throw new Error(`${source}: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as K8sObject | null;
    return value ? [value] : [];
  });
}

export type ComposeService = { command?: string[]; environment?: Record<string, string>; image?: string };

/** docker-compose.yml with its YAML merge keys (`<<: *mailroom`) resolved. */
export function composeServices(): Record<string, ComposeService> {
  const doc = parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  return doc.services;
}

/** The objects `kubectl apply -k infra/k8s` creates: every resource file kustomization.yaml lists. */
export function kustomizeObjects(): K8sObject[] {
  const dir = join(root, "infra/k8s");
  const kustomization = parse(readFileSync(join(dir, "kustomization.yaml"), "utf8")) as { resources: string[] };
  return kustomization.resources.flatMap((file) => parseDocs(readFileSync(join(dir, file), "utf8"), file));
}

/** Where the helm binary is (scripts/install-helm.sh puts it on PATH); HELM_BIN overrides. */
export function helmBinary(): string {
  const bin = process.env.HELM_BIN ?? "helm";
  try {
    execFileSync(bin, ["version", "--short"], { stdio: "pipe" });
  } catch {
    throw new Error(`no helm binary (${bin}): run scripts/setup-test-tools.sh (it runs scripts/install-helm.sh)`);
  }
  return bin;
}

/** `helm template` of the chart with the given --set values; throws with helm's stderr on failure. */
export function renderChart(set: Record<string, string> = {}, release = "mr"): K8sObject[] {
  const args = ["template", release, chartDir, "--namespace", "mailroom"];
  for (const [key, value] of Object.entries(set)) args.push("--set", `${key}=${value}`);
  const out = execFileSync(helmBinary(), args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  return parseDocs(out, "helm template");
}

/** `helm lint` of the chart; returns its output, throws on failure. */
export function lintChart(set: Record<string, string> = {}): string {
  const args = ["lint", chartDir, "--strict"];
  for (const [key, value] of Object.entries(set)) args.push("--set", `${key}=${value}`);
  return execFileSync(helmBinary(), args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

type ModelClass = { apiVersion: string; kind: string; new (data: unknown): { validate(): void } };

/** apiVersion/kind → the kubernetes-models class that validates it (core API, KEDA's and the Prometheus Operator's CRDs). */
const models: Map<string, ModelClass> = (() => {
  const found = new Map<string, ModelClass>();
  const walk = (ns: object, depth: number) => {
    for (const value of Object.values(ns)) {
      if (typeof value === "function" && "apiVersion" in value && "kind" in value) {
        const model = value as unknown as ModelClass;
        found.set(`${model.apiVersion}/${model.kind}`, model);
      } else if (value && typeof value === "object" && depth < 4) walk(value, depth + 1);
    }
  };
  walk(k8s, 0);
  walk(keda, 0);
  walk(prometheusOperator, 0);
  return found;
})();

/**
 * Validates one object against the Kubernetes OpenAPI schema of its kind; returns the problems
 * (empty = valid). A kind the schemas do not know is a problem too, never silently accepted.
 */
export function schemaProblems(obj: K8sObject): string[] {
  const model = models.get(`${obj.apiVersion}/${obj.kind}`);
  if (!model) return [`${obj.kind} ${obj.metadata?.name}: no schema for ${obj.apiVersion}/${obj.kind}`];
  try {
    new model(obj).validate();
    return [];
  } catch (err) {
    return [`${obj.kind} ${obj.metadata?.name}: ${(err as Error).message}`];
  }
}

/** The services Deployments run, by the entry point in each container's command + args. */
export function deployedServices(objects: K8sObject[]): string[] {
  return objects
    .filter((o) => o.kind === "Deployment")
    .flatMap((d) =>
      (d.spec.template.spec.containers as { command?: string[]; args?: string[] }[]).map((c) =>
        serviceOfCommand([...(c.command ?? []), ...(c.args ?? [])]),
      ),
    )
    .filter((s): s is string => s !== null)
    .sort();
}

/** Deployment of one service (by its entry point). */
export function deploymentOf(objects: K8sObject[], service: string): K8sObject | undefined {
  return objects.find((o) => o.kind === "Deployment" && deployedServices([o]).includes(service));
}
