// Who is logged in: the in-memory access token (api/client.ts) plus /users/me, shared through
// context. On start the session is restored from the HttpOnly refresh cookie, if there is one.
import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
import { Center, Loader } from "@mantine/core";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import {
  api,
  endSession,
  hasSession,
  onSessionChange,
  refreshOnce,
  setTokens,
  unwrap,
  type Schemas,
} from "../api/client";
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
  // Until the cookie has been tried, nobody can tell whether a reload is logged in.
  const [restoring, setRestoring] = useState(!hasSession());
  useEffect(() => onSessionChange(() => setLoggedIn(hasSession())), []);
  useEffect(() => {
    if (!restoring) return;
    let live = true;
    void refreshOnce().finally(() => live && setRestoring(false));
    return () => {
      live = false;
    };
  }, [restoring]);

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
        credentials: "same-origin",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body,
      });
      const json: unknown = await res.json().catch(() => null);
      if (!res.ok) throw problemFrom(res.status, json);
      queryClient.clear();
      setTokens(json as { access_token: string; refresh_token: string });
    },
    async logout() {
      // Revoked server-side (the cookie names the session); ends locally whatever the answer.
      await endSession();
      queryClient.clear();
    },
  };
  if (restoring)
    return (
      <Center mih="50vh">
        <Loader role="status" aria-label="Loading" />
      </Center>
    );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionValue {
  const v = useContext(SessionContext);
  if (!v) throw new Error("useSession outside SessionProvider");
  return v;
}
