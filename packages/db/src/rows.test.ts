import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { columnList, columns, type Row, TABLE_MODELS } from "./rows.ts";

const schema = readFileSync(new URL("../../../prisma/schema.prisma", import.meta.url), "utf8");
const models = [...schema.matchAll(/^model (\w+) \{([\s\S]*?)^\}/gm)].map(([, name, body]) => ({
  name: name as string,
  body: body as string,
}));

describe("row types from the Prisma schema", () => {
  it("names every model's table as the schema maps it", () => {
    const mapped = Object.fromEntries(models.map((m) => [/@@map\("([^"]+)"\)/.exec(m.body)?.[1] ?? m.name, m.name]));
    expect(TABLE_MODELS).toEqual(mapped);
  });

  it("holds a model's field names to be its columns: no field is mapped to another name", () => {
    const fieldMaps = models.flatMap((m) =>
      m.body
        .split("\n")
        .filter((l) => /(^|[^@])@map\(/.test(l))
        .map((l) => `${m.name}: ${l.trim()}`),
    );
    expect(fieldMaps).toEqual([]);
  });

  it("checks column lists and row shapes against the schema (tsc; these lines must stay errors)", () => {
    const emailCols = columns<"emails">()(["id", "accountId", "subject"]);
    expect(columnList(emailCols, "e")).toBe('e."id", e."accountId", e."subject"');
    // @ts-expect-error: not a column of emails: a renamed or dropped column fails tsc the same way.
    columns<"emails">()(["id", "subjct"]);
    // @ts-expect-error: a column of another table.
    columns<"emails">()(["endpointId"]);
    // @ts-expect-error: a mapper's row is picked from the table, so a missing column is an error.
    const row: Pick<Row<"deliveries">, "id" | "attemptCount"> = { id: "d" };
    expect(row.id).toBe("d");
  });
});
