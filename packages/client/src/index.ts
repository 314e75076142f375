/**
 * @mailroom/client: a typed client for the mailroom REST API and webhook verification.
 * Every named schema of the API's OpenAPI document is a type here (`Email`, `Endpoint`, `Delivery`,
 * `Domain`, `Address`, `ShieldRule`, `Account`, `EmailReceivedEvent`, …); `paths`, `operations`,
 * `components` and `webhooks` are the whole document as types.
 */
export { createClient, type MailroomClient, type MailroomClientOptions } from "./client.ts";

import type { components } from "./generated/openapi.ts";

export type * from "./generated/openapi.ts";
/** The error body of every non-2xx JSON response: `{ error: string }` (also exported as `Error`). */
export type ApiError = components["schemas"]["Error"];
export {
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
} from "./webhooks.ts";
