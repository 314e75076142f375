import { type FormEvent, useState } from "react";
import { api } from "../api.ts";
import { navigate } from "../router.ts";
import { useSubmit } from "../use-async.ts";

function PasswordSet({ email }: { email: string }) {
  return (
    <main className="auth">
      <div className="card">
        <h1>Password set</h1>
        <p>You can now sign in as {email}.</p>
        <button type="button" className="btn primary" onClick={() => navigate("/sign-in")}>
          Go to sign-in
        </button>
      </div>
    </main>
  );
}

/** Reads the one-time token from the URL fragment (never sent to the server in a URL or a log). */
export function SetPassword() {
  const token = new URLSearchParams(window.location.hash.slice(1)).get("token") ?? "";
  const [password, setPassword] = useState("");
  const [repeat, setRepeat] = useState("");
  const [done, setDone] = useState<string>();
  const { busy, error, setError, run } = useSubmit();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (password !== repeat) return setError(new Error("The two passwords differ"));
    void run(async () => {
      const r = await api<{ email: string }>("POST", "/password", { token, password });
      window.history.replaceState(null, "", window.location.pathname);
      setDone(r.email);
    });
  };
  if (done) return <PasswordSet email={done} />;
  return (
    <main className="auth">
      <form className="card" onSubmit={submit} aria-labelledby="setpw-title">
        <h1 id="setpw-title">Choose your password</h1>
        {!token && <p className="error">This page needs the link your operator sent you.</p>}
        <label>
          New password (at least 10 characters)
          <input
            type="password"
            autoComplete="new-password"
            minLength={10}
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        <label>
          Repeat it
          <input
            type="password"
            autoComplete="new-password"
            required
            value={repeat}
            onChange={(e) => setRepeat(e.target.value)}
          />
        </label>
        {error && (
          <p className="error" role="alert">
            {error.message.replace(/^password: /, "Password ")}
          </p>
        )}
        <button type="submit" className="btn primary" disabled={busy || !token} aria-busy={busy}>
          {busy ? "Saving…" : "Set password"}
        </button>
      </form>
    </main>
  );
}
