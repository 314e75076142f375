import { useCallback, useEffect, useState } from "react";

/** Loads `load()` and reloads on demand; every page shows loading, error and data from this. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const reload = useCallback(
    () => {
      setState((s) => ({ ...s, loading: true }));
      return load().then(
        (data) => setState({ data, loading: false }),
        (e: Error) => setState({ error: e.message, loading: false }),
      );
    },
    // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what `load` depends on.
    deps,
  );
  useEffect(() => {
    void reload();
  }, [reload]);
  return { ...state, reload };
}

/** A form's submit: busy while `work` runs, its error message kept for display next to the form. */
export function useSubmit() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const run = async (work: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await work();
    } catch (err) {
      setError(err instanceof Error ? err : new Error("Could not reach the server"));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}

/** Row actions (retry, pause, revoke…): run, then reload the page's data; the last error is kept. */
export function useAction(reload: () => Promise<unknown>) {
  const [error, setError] = useState<string>();
  const act = async (work: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await work();
    } catch (e) {
      setError((e as Error).message);
    }
    await reload();
  };
  return { error, act };
}
