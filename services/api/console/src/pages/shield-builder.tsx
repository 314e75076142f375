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
import { ApiError, api, type Endpoint } from "../api.ts";
import { SelectField, TextField } from "../components.tsx";
import { useSubmit } from "../use-async.ts";

/** A condition being edited; `key` keeps React's rows stable when one is removed. */
type Draft = { key: number; field: ConditionField; operator: ConditionOperator; value: string };

let drafts = 0;
const fresh = (): Draft => ({ key: ++drafts, field: "from_domain", operator: "equals", value: "" });

/** The condition as the API takes it: `value` only for operators that carry one. */
const toCondition = ({ field, operator, value }: Draft) =>
  operatorTakesValue(operator) ? { field, operator, value } : { field, operator };

/**
 * The create form: field/operator pairs come from the core schema (operatorsFor in core's shield/fields.ts, which conditionSchema checks with), so the builder
 * cannot offer a pair the API would refuse; a 400 naming a field is shown under that field.
 */
export function RuleBuilder({ endpoints, onCreated }: { endpoints: Endpoint[]; onCreated: () => Promise<unknown> }) {
  const [name, setName] = useState("");
  const [action, setAction] = useState<RuleAction>("block");
  const [routeTo, setRouteTo] = useState("");
  const [conditions, setConditions] = useState<Draft[]>([fresh()]);
  const { busy, error, run } = useSubmit();
  const field = error instanceof ApiError ? error.field : undefined;
  const errorAt = (path: string) => (field === path ? error?.message.slice(path.length + 2) : undefined);
  const change = (i: number, next: Partial<Draft>) =>
    setConditions((list) =>
      list.map((c, j) => {
        if (j !== i) return c;
        const merged = { ...c, ...next };
        // A new field may not allow the old operator: fall back to its first valid one.
        const ops = operatorsFor(merged.field);
        return ops.includes(merged.operator) ? merged : { ...merged, operator: ops[0] as ConditionOperator };
      }),
    );
  // The paths whose errors have a place under a field; any other error is shown beside the button.
  const inline = [
    "name",
    ...conditions.flatMap((c, i) =>
      operatorTakesValue(c.operator) ? [`conditions[${i}].value`, `conditions[${i}].operator`] : [],
    ),
  ];
  const create = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      await api("POST", "/shield-rules", {
        name,
        action,
        conditions: conditions.map(toCondition),
        ...(action === "route" && routeTo ? { endpointIds: [routeTo] } : {}),
      });
      setName("");
      setConditions([fresh()]);
      await onCreated();
    });
  };
  return (
    <form className="card rule-form" onSubmit={create} aria-label="Create a shield rule">
      <div className="inline-form">
        <TextField id="rule-name" label="Name" required value={name} onChange={setName} error={errorAt("name")} />
        <SelectField id="rule-action" label="Action" value={action} options={RULE_ACTIONS} onChange={setAction} />
        {action === "route" && (
          <div className="field">
            <label htmlFor="rule-route">Route to</label>
            <select id="rule-route" value={routeTo} onChange={(e) => setRouteTo(e.target.value)}>
              <option value="">quarantine (no endpoint)</option>
              {endpoints.map((ep) => (
                <option key={ep.id} value={ep.id}>
                  {ep.name}
                </option>
              ))}
            </select>
          </div>
        )}
      </div>
      <fieldset className="conditions">
        <legend>All of these conditions match</legend>
        {conditions.map((c, i) => {
          const n = i + 1;
          return (
            <div className="inline-form" key={c.key}>
              <SelectField
                id={`cond-field-${i}`}
                label={`Field ${n}`}
                value={c.field}
                options={CONDITION_FIELDS}
                onChange={(field) => change(i, { field })}
              />
              <SelectField
                id={`cond-op-${i}`}
                label={`Operator ${n}`}
                value={c.operator}
                options={operatorsFor(c.field)}
                onChange={(operator) => change(i, { operator })}
              />
              {operatorTakesValue(c.operator) && (
                <TextField
                  id={`cond-value-${i}`}
                  label={`Value ${n}`}
                  value={c.value}
                  onChange={(value) => change(i, { value })}
                  error={errorAt(`conditions[${i}].value`) ?? errorAt(`conditions[${i}].operator`)}
                />
              )}
              {conditions.length > 1 && (
                <button
                  type="button"
                  className="btn"
                  aria-label={`Remove condition ${n}`}
                  onClick={() => setConditions((list) => list.filter((_, j) => j !== i))}
                >
                  Remove
                </button>
              )}
            </div>
          );
        })}
        {conditions.length < CONDITIONS_MAX && (
          <button type="button" className="btn" onClick={() => setConditions((list) => [...list, fresh()])}>
            Add condition
          </button>
        )}
      </fieldset>
      <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
        {busy ? "Creating…" : "Create rule"}
      </button>
      {error && !inline.includes(field ?? "") && <span className="error">{error.message}</span>}
    </form>
  );
}
