export * from "./api-keys.ts";
export * from "./blobs.ts";
export * from "./client.ts";
export * from "./cursor.ts";
export * from "./ids.ts";
export { ensureDatabase, listMigrations, migrate } from "./migrate.ts";
export { migrationsDir } from "./paths.ts";
export * from "./pool.ts";
export * from "./usage.ts";
