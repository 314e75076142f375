// Moved: the stack fixtures to @mailroom/stack, seedEmail to @mailroom/testing. This re-export
// lasts until the test files that still import it (being edited by another change) are migrated.
export { concrete, type Fixture, http, seedEverything as seedAccount, seedRoutes, targetOf } from "@mailroom/stack";
export { type SeedEmail, seedEmail } from "@mailroom/testing";
