import { useQueryClient } from "@tanstack/react-query";
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { api, type Role, setSessionLostHandler } from "./api";
import { navigate } from "./router";

export type Session = { role: Role; token: string; address: string; expiresAt: string };

type SessionState = {
  session: Session | null;
  token: string | null;
  /** Why the user is back at sign-in (expired or revoked session). */
  notice: string | null;
  setSession: (session: Session) => void;
  signOut: () => Promise<void>;
};

const STORAGE_KEY = "console.session";
const SessionContext = createContext<SessionState | null>(null);

function stored(): Session | null {
  try {
    const value = window.sessionStorage.getItem(STORAGE_KEY);
    return value ? (JSON.parse(value) as Session) : null;
  } catch {
    return null;
  }
}

/**
 * The portal session lives in this tab's sessionStorage only (closing the tab forgets
 * it). A 401 from any signed-in call, or reaching `expiresAt`, returns to sign-in with
 * a message.
 */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSessionState] = useState<Session | null>(stored);
  const [notice, setNotice] = useState<string | null>(null);
  const queryClient = useQueryClient();

  const clear = useCallback(
    (message: string | null) => {
      window.sessionStorage.removeItem(STORAGE_KEY);
      setSessionState(null);
      setNotice(message);
      queryClient.clear();
      navigate("/");
    },
    [queryClient],
  );

  useEffect(() => {
    setSessionLostHandler(() => clear("Your session has expired or was signed out. Sign in again to continue."));
  }, [clear]);

  useEffect(() => {
    if (session === null) return;
    const remaining = Date.parse(session.expiresAt) - Date.now();
    const timer = window.setTimeout(
      () => clear("Your session has expired. Sign in again to continue."),
      Math.max(0, Math.min(remaining, 2_147_000_000)),
    );
    return () => window.clearTimeout(timer);
  }, [session, clear]);

  const value = useMemo<SessionState>(
    () => ({
      session,
      token: session?.token ?? null,
      notice,
      setSession: (next) => {
        window.sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
        setNotice(null);
        setSessionState(next);
        navigate(`/${next.role}`);
      },
      signOut: async () => {
        if (session)
          await api(`/api/${session.role}/auth/logout`, { method: "POST", token: session.token }).catch(() => undefined);
        clear("You are signed out.");
      },
    }),
    [session, notice, clear],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const value = useContext(SessionContext);
  if (value === null) throw new Error("useSession outside SessionProvider");
  return value;
}
