import { type FormEvent, useState } from "react";
import { api, type Session } from "../api.ts";
import { useSubmit } from "../use-async.ts";

export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const { busy, error, run } = useSubmit();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => onSignedIn(await api<Session>("POST", "/session", { email, password })));
  };
  return (
    <main className="auth">
      <form className="card" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to mailroom</h1>
        <label>
          Email
          <input
            type="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        </label>
        <label>
          Password
          <input
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        {error && (
          <p className="error" role="alert">
            {error.message}
          </p>
        )}
        <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        <p className="muted small">No account yet? Your operator adds you and sends a link to set your password.</p>
      </form>
    </main>
  );
}
