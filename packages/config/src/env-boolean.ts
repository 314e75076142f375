import { z } from "zod";

/** "true"/"1"/"yes" → true; anything else (or unset) → the default. z.coerce.boolean treats "false" as true. */
export const envBoolean = (defaultValue: boolean) =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? defaultValue : /^(1|true|yes|on)$/i.test(v)));
