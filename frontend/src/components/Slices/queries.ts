import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import { queryOf, type PageParams } from "../common/usePaged";

export function useSlices(p: PageParams, state?: string) {
  const query = { ...queryOf(p), ...(state ? { state } : {}) };
  return useQuery({
    queryKey: ["slices", query],
    queryFn: () => unwrap(api.GET("/api/v1/slices", { params: { query } })),
    placeholderData: keepPreviousData,
  });
}

export function useSlice(id: number) {
  return useQuery({
    queryKey: ["slices", { id }],
    queryFn: () => unwrap(api.GET("/api/v1/slices/{slice_id}", { params: { path: { slice_id: id } } })),
    enabled: Number.isSafeInteger(id) && id > 0,
  });
}

export function useBackends() {
  const query = { limit: 500, sort: "name" };
  return useQuery({
    queryKey: ["backends", query],
    queryFn: () => unwrap(api.GET("/api/v1/backends", { params: { query } })),
  });
}
