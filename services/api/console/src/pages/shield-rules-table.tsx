import { Fragment, useState } from "react";
import { api, type ShieldRule } from "../api.ts";
import { Button, TableHead } from "../components.tsx";
import { RuleBuilder, type RuleTargets } from "./shield-builder.tsx";

type Act = (work: () => Promise<unknown>) => Promise<void>;

const describe = (r: ShieldRule) =>
  r.conditions.map((c) => `${c.field} ${c.operator}${c.value === undefined ? "" : ` "${c.value}"`}`).join(" and ") ||
  "—";

/** The new order with rule `i` moved one place up (-1) or down (+1); POST /shield-rules/reorder takes it. */
function moved(rules: ShieldRule[], i: number, by: -1 | 1): string[] {
  const ids = rules.map((r) => r.id);
  const j = i + by;
  [ids[i], ids[j]] = [ids[j] as string, ids[i] as string];
  return ids;
}

/** What a rule does, in words: its action, where a route goes, and what it is limited to. */
function ActionCell({ r, targets }: { r: ShieldRule; targets: RuleTargets }) {
  const endpointName = (id: string) => targets.endpoints.find((e) => e.id === id)?.name ?? id;
  const where = r.addressId
    ? (targets.addresses.find((a) => a.id === r.addressId)?.address ?? r.addressId)
    : (targets.domains.find((d) => d.id === r.domainId)?.domain ?? r.domainId);
  const routes = r.action !== "route" ? "" : ` → ${r.endpointIds.map(endpointName).join(", ") || "quarantine"}`;
  return (
    <td>
      <span className="badge">{r.action}</span>
      <span className="muted small">{routes}</span>
      {r.scope !== "account" && <span className="muted small"> (only {where})</span>}
    </td>
  );
}

function RuleActions(props: { rules: ShieldRule[]; i: number; act: Act; editing: boolean; toggle: () => void }) {
  const { rules, i, act } = props;
  const r = rules[i] as ShieldRule;
  const reorder = (by: -1 | 1) => act(() => api("POST", "/shield-rules/reorder", { ids: moved(rules, i, by) }));
  return (
    <div className="badges">
      {i > 0 && (
        <Button label={`Move ${r.name} up`} onClick={() => reorder(-1)}>
          ↑
        </Button>
      )}
      {i < rules.length - 1 && (
        <Button label={`Move ${r.name} down`} onClick={() => reorder(1)}>
          ↓
        </Button>
      )}
      <Button
        label={`${r.enabled ? "Disable" : "Enable"} ${r.name}`}
        onClick={() => act(() => api("PATCH", `/shield-rules/${r.id}`, { enabled: !r.enabled }))}
      >
        {r.enabled ? "Disable" : "Enable"}
      </Button>
      <button
        type="button"
        className="btn"
        aria-label={`Edit ${r.name}`}
        aria-expanded={props.editing}
        onClick={props.toggle}
      >
        Edit
      </button>
      <Button
        kind="danger"
        label={`Delete ${r.name}`}
        onClick={() => act(() => api("DELETE", `/shield-rules/${r.id}`))}
      >
        Delete
      </Button>
    </div>
  );
}

/** The rules in evaluation order, each with its actions and, when asked, its edit form below it. */
export function RulesTable(props: {
  rules: ShieldRule[];
  targets: RuleTargets;
  act: Act;
  reload: () => Promise<unknown>;
}) {
  const [editing, setEditing] = useState<string>();
  return (
    <table className="table" aria-label="Rules in evaluation order">
      <TableHead columns={["#", "Name", "Conditions", "Action", "Status"]} actions />
      <tbody>
        {props.rules.map((r, i) => (
          <Fragment key={r.id}>
            <tr className={r.enabled ? undefined : "revoked"}>
              <td>{r.priority}</td>
              <td>{r.name}</td>
              <td className="mono small">{describe(r)}</td>
              <ActionCell r={r} targets={props.targets} />
              <td>
                <span className={`badge ${r.enabled ? "delivered" : "retrying"}`}>
                  {r.enabled ? "enabled" : "disabled"}
                </span>
              </td>
              <td>
                <RuleActions
                  rules={props.rules}
                  i={i}
                  act={props.act}
                  editing={editing === r.id}
                  toggle={() => setEditing(editing === r.id ? undefined : r.id)}
                />
              </td>
            </tr>
            {editing === r.id && (
              <tr className="details">
                <td colSpan={6}>
                  <RuleBuilder
                    targets={props.targets}
                    rule={r}
                    onCancel={() => setEditing(undefined)}
                    onSaved={async () => {
                      setEditing(undefined);
                      await props.reload();
                    }}
                  />
                </td>
              </tr>
            )}
          </Fragment>
        ))}
      </tbody>
    </table>
  );
}
