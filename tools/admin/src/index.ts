// The admin commands without the CLI around them: tests and the in-process stack run them against their database.
export { runCommand } from "./commands.ts";
