// The verifier's library surface: the API's `POST /domains/{id}/verify` runs the same check and the
// same lifecycle as the scheduled loop, so the two can never disagree about what "verified" means.
export { type CheckResult, checkRecords, type RecordResult } from "./check.ts";
export { createDomainDns, type DnsOptions, type DomainDns, type Lookup } from "./dns.ts";
export * from "./lifecycle.ts";
export {
  type CheckOutcome,
  checkDomain,
  runDueChecks,
  startVerifier,
  type Verifier,
  type VerifierDeps,
  type VerifierOptions,
  verifyNow,
} from "./verifier.ts";
