import { invalid } from "@mailroom/core";
import type { CursorCodec, CursorPosition } from "@mailroom/db";

/** Spec §7: anything malformed or tampered with is `400 Invalid cursor`. */
export function decodeCursor(codec: CursorCodec, cursor: string | undefined): CursorPosition | null {
  if (cursor === undefined) return null;
  const pos = codec.decode(cursor);
  if (!pos) throw invalid("Invalid cursor");
  return pos;
}

/**
 * Prisma `where` for "strictly after `pos`" in the order (`field` desc, id desc). Rows inserted
 * while a client pages never shift the rows it has not seen yet: no duplicates, no gaps.
 */
export function after(field: string, pos: CursorPosition | null) {
  if (!pos) return {};
  return { OR: [{ [field]: { lt: pos.at } }, { [field]: pos.at, id: { lt: pos.id } }] };
}

/** The order that goes with `after`. */
export const newestFirst = (field: string) => [{ [field]: "desc" as const }, { id: "desc" as const }];

/**
 * Turns `limit + 1` fetched rows into a page: `nextCursor` is non-null exactly when a further row
 * exists, and points at the last row returned.
 */
export function toPage<R extends { id: string }, V>(
  codec: CursorCodec,
  rows: R[],
  limit: number,
  at: (row: R) => Date,
  view: (row: R) => V,
): { data: V[]; nextCursor: string | null } {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return {
    data: kept.map(view),
    nextCursor: more && last ? codec.encode({ at: at(last), id: last.id }) : null,
  };
}
