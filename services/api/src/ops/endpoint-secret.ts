import { randomBase62 } from "@mailroom/db";

/** An endpoint's signing secret: `whsec_` + 40 base62 characters, shown once, at creation or rotation. */
export const newEndpointSecret = (): string => `whsec_${randomBase62(40)}`;
