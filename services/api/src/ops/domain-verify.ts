import { AppError, domainView } from "@mailroom/core";
import { createDomainDns, verifyNow } from "@mailroom/domain-verification";
import type { OpsContext } from "./context.ts";
import { findOwnedDomain } from "./domains.ts";

/**
 * `POST /domains/{id}/verify`: one immediate check with the verifier's own code, so the API and the
 * scheduled checks can never disagree. A `failed` domain first gets a new 72 h window. The check
 * changes the status when the records say so, but leaves the automatic schedule alone.
 */
export async function verifyDomain(ctx: OpsContext, accountId: string, id: string) {
  const owned = await findOwnedDomain(ctx, accountId, id);
  const result = await verifyNow(
    { prisma: ctx.prisma, dns: ctx.domainDns ?? createDomainDns(), logger: ctx.logger },
    owned.id,
  );
  if (!result) throw new AppError("not_found", "Domain not found"); // deleted meanwhile
  return { ...domainView(result.domain), records: result.records };
}
