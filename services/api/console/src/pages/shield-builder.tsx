import {
  CONDITION_FIELDS,
  CONDITIONS_MAX,
  type ConditionField,
  type ConditionOperator,
  operatorsFor,
  operatorTakesValue,
  RULE_ACTIONS,
  type RuleAction,
} from "@mailroom/core/shield-fields";
import { type FormEvent, useState } from "react";
import {
  type Address,
  ApiError,
  api,
  type Domain,
  type Endpoint,
  type ShieldCondition,
  type ShieldRule,
} from "../api.ts";
import { SelectField, TextField } from "../components.tsx";
import { useSubmit } from "../use-async.ts";

/** A condition being edited; `key` keeps React's rows stable when one is removed. */
type Draft = { key: number; field: ConditionField; operator: ConditionOperator; value: string };

let drafts = 0;
const fresh = (): Draft => ({ key: ++drafts, field: "from_domain", operator: "equals", value: "" });
const draftOf = (c: ShieldCondition): Draft => ({
  key: ++drafts,
  field: c.field as ConditionField,
  operator: c.operator as ConditionOperator,
  value: c.value ?? "",
});

/** The condition as the API takes it: `value` only for operators that carry one. */
const toCondition = ({ field, operator, value }: Draft) =>
  operatorTakesValue(operator) ? { field, operator, value } : { field, operator };

/** What the rule applies to, as one select value: "" (account), "d:<domainId>" or "a:<addressId>". */
const scopeValue = (r: ShieldRule) => (r.addressId ? `a:${r.addressId}` : r.domainId ? `d:${r.domainId}` : "");
const scopeBody = (v: string) =>
  v.startsWith("d:") ? { domainId: v.slice(2) } : v.startsWith("a:") ? { addressId: v.slice(2) } : {};

export type RuleTargets = { endpoints: Endpoint[]; domains: Domain[]; addresses: Address[] };

function ConditionRow(props: {
  c: Draft;
  i: number;
  removable: boolean;
  change: (next: Partial<Draft>) => void;
  remove: () => void;
  errorAt: Err;
  p: string;
}) {
  const { c, i, p, change } = props;
  const n = i + 1;
  return (
    <div className="inline-form">
      <SelectField
        id={`${p}cond-field-${i}`}
        label={`Field ${n}`}
        value={c.field}
        options={CONDITION_FIELDS}
        onChange={(field) => change({ field })}
      />
      <SelectField
        id={`${p}cond-op-${i}`}
        label={`Operator ${n}`}
        value={c.operator}
        options={operatorsFor(c.field)}
        onChange={(operator) => change({ operator })}
      />
      {operatorTakesValue(c.operator) && (
        <TextField
          id={`${p}cond-value-${i}`}
          label={`Value ${n}`}
          value={c.value}
          onChange={(value) => change({ value })}
          error={props.errorAt(`conditions[${i}].value`) ?? props.errorAt(`conditions[${i}].operator`)}
        />
      )}
      {props.removable && (
        <button type="button" className="btn" aria-label={`Remove condition ${n}`} onClick={props.remove}>
          Remove
        </button>
      )}
    </div>
  );
}

function ConditionRows(props: {
  conditions: Draft[];
  set: (f: (l: Draft[]) => Draft[]) => void;
  errorAt: Err;
  p: string;
}) {
  const { conditions, set } = props;
  const change = (i: number, next: Partial<Draft>) =>
    set((list) =>
      list.map((c, j) => {
        if (j !== i) return c;
        const merged = { ...c, ...next };
        // A new field may not allow the old operator: fall back to its first valid one.
        const ops = operatorsFor(merged.field);
        return ops.includes(merged.operator) ? merged : { ...merged, operator: ops[0] as ConditionOperator };
      }),
    );
  return (
    <fieldset className="conditions">
      <legend>All of these conditions match</legend>
      {conditions.map((c, i) => (
        <ConditionRow
          key={c.key}
          c={c}
          i={i}
          removable={conditions.length > 1}
          change={(next) => change(i, next)}
          remove={() => set((list) => list.filter((_, j) => j !== i))}
          errorAt={props.errorAt}
          p={props.p}
        />
      ))}
      {conditions.length < CONDITIONS_MAX && (
        <button type="button" className="btn" onClick={() => set((list) => [...list, fresh()])}>
          Add condition
        </button>
      )}
    </fieldset>
  );
}

type Err = (path: string) => string | undefined;

/**
 * A route rule's destinations: at most one webhook-kind endpoint (webhook, Slack, Discord) and one
 * email endpoint (spec §8; the API checks it and its error shows here). Two selects, one per kind,
 * so the form cannot offer a pair the API would refuse; none at all quarantines the message.
 */
function Destinations(props: {
  endpoints: Endpoint[];
  chosen: string[];
  onChange: (ids: string[]) => void;
  error?: string | undefined;
  p: string;
}) {
  const kinds = [
    { kind: "webhook", label: "Route to", none: "no webhook", list: props.endpoints.filter((e) => e.type !== "email") },
    {
      kind: "email",
      label: "Also email to",
      none: "no email",
      list: props.endpoints.filter((e) => e.type === "email"),
    },
  ];
  const pick = (list: Endpoint[]) => props.chosen.find((id) => list.some((e) => e.id === id)) ?? "";
  return (
    <fieldset className="destinations">
      <legend>Destinations (none of either: quarantined)</legend>
      <div className="inline-form">
        {kinds.map(({ kind, label, none, list }) => (
          <div className="field" key={kind}>
            <label htmlFor={`${props.p}route-${kind}`}>{label}</label>
            <select
              id={`${props.p}route-${kind}`}
              value={pick(list)}
              onChange={(e) => {
                const others = props.chosen.filter((id) => !list.some((x) => x.id === id));
                props.onChange(e.target.value ? [...others, e.target.value] : others);
              }}
            >
              <option value="">{none}</option>
              {list.map((ep) => (
                <option key={ep.id} value={ep.id}>
                  {ep.name} ({ep.type})
                </option>
              ))}
            </select>
          </div>
        ))}
      </div>
      {props.error && <span className="error">{props.error}</span>}
    </fieldset>
  );
}

function ScopeSelect(props: { targets: RuleTargets; value: string; onChange: (v: string) => void }) {
  const domainName = (id: string) => props.targets.domains.find((d) => d.id === id)?.domain ?? id;
  return (
    <div className="field">
      <label htmlFor="rule-scope">Applies to</label>
      <select id="rule-scope" value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        <option value="">all mail of the account</option>
        {props.targets.domains.map((d) => (
          <option key={d.id} value={`d:${d.id}`}>
            domain {d.domain}
          </option>
        ))}
        {props.targets.addresses.map((a) => (
          <option key={a.id} value={`a:${a.id}`}>
            address {a.address ?? `${a.localPart}@${domainName(a.domainId)}`}
          </option>
        ))}
      </select>
    </div>
  );
}

/** The form's state and its submit: POST for a new rule, PATCH (name, conditions, destinations) for `rule`. */
function useRuleDraft(rule: ShieldRule | undefined, onSaved: () => unknown) {
  const [name, setName] = useState(rule?.name ?? "");
  const [action, setAction] = useState<RuleAction>(rule?.action ?? "block");
  const [routeTo, setRouteTo] = useState<string[]>(rule?.endpointIds ?? []);
  const [scope, setScope] = useState(rule ? scopeValue(rule) : "");
  const [conditions, setConditions] = useState<Draft[]>(rule ? rule.conditions.map(draftOf) : [fresh()]);
  const { busy, error, run } = useSubmit();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const common = {
        name,
        conditions: conditions.map(toCondition),
        ...(action === "route" ? { endpointIds: routeTo } : {}),
      };
      if (rule) await api("PATCH", `/shield-rules/${rule.id}`, common);
      else await api("POST", "/shield-rules", { ...common, action, ...scopeBody(scope) });
      if (!rule) {
        setName("");
        setConditions([fresh()]);
        setRouteTo([]);
      }
      await onSaved();
    });
  };
  return {
    name,
    setName,
    action,
    setAction,
    routeTo,
    setRouteTo,
    scope,
    setScope,
    conditions,
    setConditions,
    busy,
    error,
    submit,
  };
}

/** Where an API error goes: under the field it names, or (`inline` false) beside the button. */
function errorPlaces(error: Error | undefined, conditions: Draft[]) {
  const field = error instanceof ApiError ? error.field : undefined;
  const errorAt: Err = (path) => (field === path ? error?.message.slice(path.length + 2) : undefined);
  const places = [
    "name",
    "endpointIds",
    "endpointIds[0]",
    "endpointIds[1]",
    ...conditions.flatMap((c, i) =>
      operatorTakesValue(c.operator) ? [`conditions[${i}].value`, `conditions[${i}].operator`] : [],
    ),
  ];
  return { errorAt, inline: places.includes(field ?? "") };
}

/** Name, and for a new rule its action and scope (an existing rule's are shown as fixed). */
function RuleHead(props: {
  f: ReturnType<typeof useRuleDraft>;
  rule: ShieldRule | undefined;
  targets: RuleTargets;
  p: string;
  error: string | undefined;
}) {
  const { f, rule } = props;
  return (
    <div className="inline-form">
      <TextField
        id={`${props.p}rule-name`}
        label="Name"
        required
        value={f.name}
        onChange={f.setName}
        error={props.error}
      />
      {rule ? (
        <p className="muted small">
          Action <strong>{rule.action}</strong> · {rule.scope} scope (fixed once created)
        </p>
      ) : (
        <>
          <SelectField id="rule-action" label="Action" value={f.action} options={RULE_ACTIONS} onChange={f.setAction} />
          <ScopeSelect targets={props.targets} value={f.scope} onChange={f.setScope} />
        </>
      )}
    </div>
  );
}

/**
 * Create or edit a rule. Field/operator pairs come from core (operatorsFor, which the API's schema
 * checks with), so the builder cannot offer a pair the API would refuse; a 400 naming a field is
 * shown under that field. Editing PATCHes name, conditions and destinations: the API fixes action
 * and scope at creation, so those show but cannot change.
 */
export function RuleBuilder(props: {
  targets: RuleTargets;
  rule?: ShieldRule;
  onSaved: () => unknown;
  onCancel?: () => void;
}) {
  const { rule } = props;
  const p = rule ? `edit-${rule.id}-` : "";
  const f = useRuleDraft(rule, props.onSaved);
  const { errorAt, inline } = errorPlaces(f.error, f.conditions);
  const label = rule ? `Edit rule ${rule.name}` : "Create a shield rule";
  return (
    <form className={rule ? "edit-form rule-form" : "card rule-form"} onSubmit={f.submit} aria-label={label}>
      <RuleHead f={f} rule={rule} targets={props.targets} p={p} error={errorAt("name")} />
      {f.action === "route" && (
        <Destinations
          endpoints={props.targets.endpoints}
          chosen={f.routeTo}
          onChange={f.setRouteTo}
          error={errorAt("endpointIds") ?? errorAt("endpointIds[0]") ?? errorAt("endpointIds[1]")}
          p={p}
        />
      )}
      <ConditionRows conditions={f.conditions} set={f.setConditions} errorAt={errorAt} p={p} />
      <div className="toolbar">
        <button type="submit" className="btn primary" disabled={f.busy} aria-busy={f.busy}>
          {f.busy ? "Saving…" : rule ? "Save rule" : "Create rule"}
        </button>
        {props.onCancel && (
          <button type="button" className="btn" onClick={props.onCancel}>
            Cancel
          </button>
        )}
        {f.error && !inline && <span className="error">{f.error.message}</span>}
      </div>
    </form>
  );
}
