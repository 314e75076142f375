/**
 * How a parsed address header (mailparser's `{ value: [{ address, name, group }] }`) becomes the
 * addresses the shield rules see. One definition for the rule engine (its parse worker imports this
 * file directly: erasable TypeScript, no imports) and the API's dry run, so both read
 * `Alice <alice@Sender.Test>`, lists and groups the same way.
 */
export type ParsedAddress = { address?: string; name?: string; group?: ParsedAddress[] };
export type ParsedAddressField = { value: ParsedAddress[] };

const fieldsOf = (field: ParsedAddressField | ParsedAddressField[] | undefined): ParsedAddressField[] =>
  Array.isArray(field) ? field : field ? [field] : [];

/** Every mailbox of a To/Cc-like header, group members included, lowercased; empty ones dropped. */
export function addressesOf(field: ParsedAddressField | ParsedAddressField[] | undefined): string[] {
  return fieldsOf(field)
    .flatMap((o) => o.value)
    .flatMap((a) => (a.group ? a.group : [a]))
    .map((a) => a.address?.toLowerCase() ?? "")
    .filter((a) => a !== "");
}

/** The From rule: the first entry's address, lowercased ("" when it has none, e.g. a group). */
export function firstAddressOf(field: ParsedAddressField | ParsedAddressField[] | undefined): string {
  return fieldsOf(field)[0]?.value[0]?.address?.toLowerCase() ?? "";
}

/** The first entry's display name, or null. */
export function firstNameOf(field: ParsedAddressField | ParsedAddressField[] | undefined): string | null {
  return fieldsOf(field)[0]?.value[0]?.name || null;
}
