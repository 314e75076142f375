import { fileURLToPath } from "node:url";

export const migrationsDir = fileURLToPath(new URL("../../../prisma/migrations", import.meta.url));
