// Prisma 6 CLI configured with the JavaScript engine, so that `migrate diff` and `db pull` run
// offline (scripts/prisma6.mjs).
import { PrismaPg } from "@prisma/adapter-pg";
import { defineConfig } from "prisma/config";

// Postgres's one-byte "char" (pg_constraint.contype and other catalog columns the introspection
// reads) is a type the pg adapter refuses ("Column type 'char' could not be deserialized"): read as
// text, which is what it is. Only `db pull` meets it; nothing of the application's has that type.
const PG_CHAR = 18;
const PG_TEXT = 25;

type Fields = { fields?: { dataTypeID: number }[] };

function readCharAsText(adapter: object): void {
  const queryable = Object.getPrototypeOf(Object.getPrototypeOf(adapter)) as {
    performIO(...args: unknown[]): Promise<Fields>;
    charAsText?: boolean;
  };
  if (queryable.charAsText) return;
  const performIO = queryable.performIO;
  queryable.performIO = async function (this: unknown, ...args: unknown[]) {
    const r = await performIO.apply(this, args);
    for (const f of r.fields ?? []) if (f.dataTypeID === PG_CHAR) f.dataTypeID = PG_TEXT;
    return r;
  };
  queryable.charAsText = true;
}

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: "../../prisma/schema.prisma",
  adapter: async () => {
    const factory = new PrismaPg({
      connectionString: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
    });
    const connect = factory.connect.bind(factory);
    factory.connect = async () => {
      const adapter = await connect();
      readCharAsText(adapter);
      return adapter;
    };
    return factory;
  },
});
