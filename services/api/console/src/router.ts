import { useEffect, useState } from "react";

/** Client-side routes under /console (the server answers index.html for every one of them). */
export const BASE = "/console";

export function navigate(path: string): void {
  window.history.pushState(null, "", `${BASE}${path}`);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

/** The path below /console, e.g. "/deliveries"; "/" for the overview. */
const read = () => window.location.pathname.replace(/^\/console/, "").replace(/\/+$/, "") || "/";

export function usePath(): string {
  const [path, setPath] = useState(read);
  useEffect(() => {
    const on = () => setPath(read());
    window.addEventListener("popstate", on);
    return () => window.removeEventListener("popstate", on);
  }, []);
  return path;
}
