// Names for the ids a subscriber row holds: tenants and slices, fetched once per page view.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import { useAllTenants } from "../Tenants/queries";

export function useAllSlices(enabled = true) {
  const query = { limit: 500, sort: "name" };
  return useQuery({
    queryKey: ["slices", query],
    queryFn: () => unwrap(api.GET("/api/v1/slices", { params: { query } })),
    enabled,
  });
}

export function useNames() {
  const tenants = useAllTenants();
  const slices = useAllSlices();
  const tenantName = new Map((tenants.data?.data ?? []).map((t) => [t.id, t.name]));
  const sliceName = new Map((slices.data?.data ?? []).map((s) => [s.id, s.name]));
  return { tenants: tenants.data?.data ?? [], slices: slices.data?.data ?? [], tenantName, sliceName };
}
