import { AppError } from "@mailroom/core";
import { checkAttachmentLink, SIGNED_LINK_PATH } from "@mailroom/storage";
import { Router } from "express";
import { parse } from "../lib/http.ts";
import type { OpsContext } from "../ops/context.ts";
import { attachmentParams, getAttachment } from "../ops/emails.ts";
import { sendAttachment } from "./emails.ts";

/**
 * Attachment links from webhook payloads (BYTE_STORE=postgres with SIGNED_URL_SECRET): served
 * without an API key, because the link's HMAC and expiry are the authorisation. Mounted outside
 * /api/v1 (and its key check). A wrong, tampered or expired link is 403, and tells nothing else.
 */
export function signedFilesRouter(ctx: OpsContext, secret: string, now: () => Date = () => new Date()): Router {
  const r = Router();
  r.get(SIGNED_LINK_PATH, async (req, res, next) => {
    try {
      const p = parse(attachmentParams, req.params, "path");
      const check = checkAttachmentLink(secret, p.id, Number(p.n), req.query, now());
      if (!check.ok) throw new AppError("forbidden", "This link is not valid or has expired");
      const email = await ctx.prisma.email.findUnique({ where: { id: p.id }, select: { accountId: true } });
      if (!email) throw new AppError("not_found", "Email not found");
      sendAttachment(res, await getAttachment(ctx, email.accountId, p.id, Number(p.n)));
    } catch (err) {
      next(err);
    }
  });
  return r;
}
