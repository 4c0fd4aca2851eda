// Who is logged in: the token pair (api/client.ts) plus /users/me, shared through context.
import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, hasSession, onSessionChange, setTokens, unwrap, type Schemas } from "../api/client";
import { problemFrom } from "../api/problem";

export type Me = Schemas["UserPublic"];
export type Role = Schemas["Role"];

interface SessionValue {
  me: Me | undefined;
  loading: boolean;
  loggedIn: boolean;
  login: (username: string, password: string) => Promise<void>;
  logout: () => Promise<void>;
}

const SessionContext = createContext<SessionValue | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const queryClient = useQueryClient();
  const [loggedIn, setLoggedIn] = useState(hasSession());
  useEffect(() => onSessionChange(() => setLoggedIn(hasSession())), []);

  const meQuery = useQuery({
    queryKey: ["me", loggedIn],
    queryFn: () => unwrap(api.GET("/api/v1/users/me")),
    enabled: loggedIn,
    staleTime: 60_000,
  });

  const value: SessionValue = {
    me: loggedIn ? meQuery.data : undefined,
    loading: loggedIn && meQuery.isPending,
    loggedIn,
    async login(username, password) {
      const body = new URLSearchParams({ username, password });
      const res = await fetch("/api/v1/login/access-token", {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body,
      });
      const json: unknown = await res.json().catch(() => null);
      if (!res.ok) throw problemFrom(res.status, json);
      queryClient.clear();
      setTokens(json as { access_token: string; refresh_token: string });
    },
    async logout() {
      const raw = sessionStorage.getItem("sliceportal.tokens");
      const refresh = raw ? (JSON.parse(raw) as { refresh_token?: string }).refresh_token : undefined;
      if (refresh) {
        // Revoke server-side; the session ends locally whatever the answer.
        await api.POST("/api/v1/login/logout", { body: { refresh_token: refresh } }).catch(() => undefined);
      }
      setTokens(null);
      queryClient.clear();
    },
  };
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionValue {
  const v = useContext(SessionContext);
  if (!v) throw new Error("useSession outside SessionProvider");
  return v;
}
