import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import { queryOf, type PageParams } from "../common/usePaged";

export function useTenants(p: PageParams) {
  const query = queryOf(p);
  return useQuery({
    queryKey: ["tenants", query],
    queryFn: () => unwrap(api.GET("/api/v1/tenants", { params: { query } })),
    placeholderData: keepPreviousData,
  });
}

/** All tenants for pickers (operators only; tenant users get 403 and see their own id). */
export function useAllTenants(enabled = true) {
  const query = { limit: 500, sort: "name" };
  return useQuery({
    queryKey: ["tenants", query],
    queryFn: () => unwrap(api.GET("/api/v1/tenants", { params: { query } })),
    enabled,
  });
}
