import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";

/** The whole catalogue (seed 000 Table 1 has a handful of rows; one page holds them). */
export function useSliceTypes() {
  const params = { limit: 500, sort: "position" };
  return useQuery({
    queryKey: ["slice-types", params],
    queryFn: () => unwrap(api.GET("/api/v1/slice-types", { params: { query: params } })),
    staleTime: Infinity,
  });
}
