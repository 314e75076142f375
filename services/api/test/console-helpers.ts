// Moved to @mailroom/stack; this re-export lasts until the test files that still import it are migrated.
export { type ConsoleClient, consoleClient, createMember } from "@mailroom/stack";
