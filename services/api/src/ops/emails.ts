import { AppError, emailView } from "@mailroom/core";
import type { OpsContext } from "./context.ts";

export async function getEmail(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.email.findFirst({
    where: { id, accountId },
    include: { attachments: { select: { index: true, filename: true, contentType: true, size: true, stored: true } } },
  });
  if (!row) throw new AppError("not_found", "Email not found");
  return emailView(row, row.attachments, ctx.config.publicApiUrl);
}
