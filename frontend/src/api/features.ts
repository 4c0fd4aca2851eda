// Which optional API endpoints the running backend offers, read from its live OpenAPI document,
// so pages for endpoints still being built show "not available yet" instead of failing.
import { useQuery } from "@tanstack/react-query";

export function useApiPaths() {
  return useQuery({
    queryKey: ["openapi-paths"],
    queryFn: async () => {
      const res = await fetch("/api/v1/openapi.json");
      if (!res.ok) return new Set<string>();
      const doc = (await res.json()) as { paths?: Record<string, unknown> };
      return new Set(Object.keys(doc.paths ?? {}));
    },
    staleTime: 5 * 60_000,
  });
}

export function useHasPath(path: string): boolean | undefined {
  const paths = useApiPaths();
  return paths.data ? paths.data.has(path) : undefined;
}
