// Plan constants live in @mailroom/core (shared with the API); re-exported for this service's imports.
export { MONTHLY_ALLOTMENT, monthKey } from "@mailroom/core";
