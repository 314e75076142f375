import { useCallback, useEffect, useRef, useState } from "react";

/**
 * Loads `load()` and reloads on demand; every page shows loading, error and data from this. Only
 * the newest load may set the state: a new one (a filter changed, a live event) aborts the one in
 * flight, and an answer that still arrives for an older one is dropped, so a slow answer for the
 * previous filter never replaces the list for the filter now selected.
 */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[] = []) {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const latest = useRef<AbortController | undefined>(undefined);
  const reload = useCallback(
    () => {
      latest.current?.abort();
      const mine = new AbortController();
      latest.current = mine;
      const current = () => latest.current === mine && !mine.signal.aborted;
      setState((s) => ({ ...s, loading: true }));
      return load(mine.signal).then(
        (data) => {
          if (current()) setState({ data, loading: false });
        },
        (e: Error) => {
          if (current()) setState({ error: e.message, loading: false });
        },
      );
    },
    // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what `load` depends on.
    deps,
  );
  useEffect(() => {
    void reload();
  }, [reload]);
  // Leaving the page: nothing more may land in its state.
  useEffect(() => () => latest.current?.abort(), []);
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
