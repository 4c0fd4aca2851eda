import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import { queryOf, type PageParams } from "../common/usePaged";
import type { SliceState } from "./StateBadge";

export function useSlices(p: PageParams, state?: SliceState) {
  const query = { ...queryOf(p), ...(state ? { state } : {}) };
  return useQuery({
    queryKey: ["slices", query],
    queryFn: () => unwrap(api.GET("/api/v1/slices", { params: { query } })),
    placeholderData: keepPreviousData,
    refetchInterval: 5000, // the state shown is derived from facts that change on their own
  });
}

export function useSlice(id: number) {
  return useQuery({
    queryKey: ["slices", { id }],
    queryFn: () => unwrap(api.GET("/api/v1/slices/{slice_id}", { params: { path: { slice_id: id } } })),
    enabled: Number.isSafeInteger(id) && id > 0,
    refetchInterval: 5000,
  });
}

export function useBackends() {
  const query = { limit: 500, sort: "name" };
  return useQuery({
    queryKey: ["backends", query],
    queryFn: () => unwrap(api.GET("/api/v1/backends", { params: { query } })),
  });
}

export function useSliceStatus(id: number) {
  return useQuery({
    queryKey: ["slices", { id, status: true }],
    queryFn: () => unwrap(api.GET("/api/v1/slices/{slice_id}/status", { params: { path: { slice_id: id } } })),
    enabled: Number.isSafeInteger(id) && id > 0,
    refetchInterval: 2000, // derived from facts that change without the user (pushes, samples)
  });
}

export function useSliceStateCounts() {
  return useQuery({
    queryKey: ["slices", "states"],
    queryFn: () => unwrap(api.GET("/api/v1/slices/states")),
    refetchInterval: 5000,
  });
}
