import { StrictMode, useCallback, useEffect, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import { api, type Overview, type Session, setCsrfToken } from "./api.ts";
import { Loading } from "./components.tsx";
import { ApiKeys } from "./pages/api-keys.tsx";
import { Deliveries } from "./pages/deliveries.tsx";
import { Domains } from "./pages/domains.tsx";
import { Endpoints } from "./pages/endpoints.tsx";
import { Inboxes } from "./pages/inboxes.tsx";
import { Mail } from "./pages/mail.tsx";
import { Overview as OverviewPage } from "./pages/overview.tsx";
import { SetPassword } from "./pages/set-password.tsx";
import { Settings } from "./pages/settings.tsx";
import { Shield } from "./pages/shield.tsx";
import { SignIn } from "./pages/sign-in.tsx";
import { navigate, usePath } from "./router.ts";
import "./styles.css";

const NAV = [
  { path: "/", label: "Overview" },
  { path: "/mail", label: "Mail" },
  { path: "/domains", label: "Domains" },
  { path: "/inboxes", label: "Inboxes" },
  { path: "/endpoints", label: "Endpoints" },
  { path: "/shield", label: "Shield rules" },
  { path: "/deliveries", label: "Deliveries" },
  { path: "/api-keys", label: "API keys" },
  { path: "/settings", label: "Settings" },
] as const;

/** The navigation, the current page marked, with the dead-delivery count on Deliveries. */
function Nav({ path, dead }: { path: string; dead: number | undefined }) {
  const ref = useRef<HTMLElement>(null);
  // Where the navigation scrolls sideways (narrow screens), the current page's link is in view;
  // again when the dead-delivery count arrives, which widens the links before it.
  // biome-ignore lint/correctness/useExhaustiveDependencies: path and dead are triggers, not inputs.
  useEffect(() => {
    ref.current?.querySelector('[aria-current="page"]')?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }, [path, dead]);
  return (
    <nav aria-label="Console" ref={ref}>
      {NAV.map((n) => (
        <a
          key={n.path}
          href={`/console${n.path === "/" ? "/" : n.path}`}
          aria-current={path === n.path ? "page" : undefined}
          onClick={(e) => {
            e.preventDefault();
            navigate(n.path === "/" ? "/" : n.path);
          }}
        >
          {n.label}
          {n.path === "/deliveries" && dead !== undefined && dead > 0 && (
            <span className="count" data-testid="dead-count" title={`${dead} dead deliveries`}>
              {dead}
            </span>
          )}
        </a>
      ))}
    </nav>
  );
}

/** The page for a path below /console (the overview for any unknown one). */
function PageAt({ path, onDeliveriesChanged }: { path: string; onDeliveriesChanged: () => void }) {
  switch (path) {
    case "/deliveries":
      return <Deliveries onChanged={onDeliveriesChanged} />;
    case "/mail":
      return <Mail />;
    case "/domains":
      return <Domains />;
    case "/inboxes":
      return <Inboxes />;
    case "/endpoints":
      return <Endpoints />;
    case "/shield":
      return <Shield />;
    case "/api-keys":
      return <ApiKeys />;
    case "/settings":
      return <Settings />;
    default:
      return <OverviewPage />;
  }
}

function Shell({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const path = usePath();
  const [dead, setDead] = useState<number>();
  // The navigation's dead-delivery count: on every navigation, after page actions, and each minute.
  const refresh = useCallback(() => {
    api<Overview>("GET", "/overview").then(
      (o) => setDead(o.deliveries.dead),
      () => undefined,
    );
  }, []);
  useEffect(() => {
    const t = setInterval(refresh, 60_000);
    return () => clearInterval(t);
  }, [refresh]);
  // `path` is the trigger: every navigation asks again.
  // biome-ignore lint/correctness/useExhaustiveDependencies: path is the trigger, not an input.
  useEffect(refresh, [path, refresh]);
  return (
    <div className="shell">
      <header className="top">
        <span className="brand">mailroom</span>
        <Nav path={path} dead={dead} />
        <span className="who">
          <span className="member-email" title={session.email}>
            {session.email}
          </span>
          <button
            type="button"
            className="btn"
            onClick={async () => {
              await api("DELETE", "/session").catch(() => undefined);
              onSignOut();
            }}
          >
            Sign out
          </button>
        </span>
      </header>
      <main className="content">
        <PageAt path={path} onDeliveriesChanged={refresh} />
      </main>
    </div>
  );
}

function App() {
  const path = usePath();
  const [session, setSession] = useState<Session | null>();
  const signedIn = (s: Session | null) => {
    setCsrfToken(s?.csrfToken);
    setSession(s);
  };
  // Once, on load: signedIn only calls setters, which never change.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs once; signedIn is setters only.
  useEffect(() => {
    api<Session>("GET", "/session").then(signedIn, () => signedIn(null));
    const out = () => signedIn(null);
    window.addEventListener("console:signed-out", out);
    return () => window.removeEventListener("console:signed-out", out);
  }, []);
  if (path === "/set-password") return <SetPassword />;
  if (session === undefined) return <Loading />;
  if (session === null)
    return (
      <SignIn
        onSignedIn={(s) => {
          signedIn(s);
          if (path === "/sign-in") navigate("/");
        }}
      />
    );
  return <Shell session={session} onSignOut={() => signedIn(null)} />;
}

const root = document.getElementById("root");
if (root)
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
