// Loading / not-found / error states of a query, so pages only render the happy path.
import type { ReactNode } from "react";
import { Alert, Center, Loader, Stack, Text, Title } from "@mantine/core";
import type { UseQueryResult } from "@tanstack/react-query";
import { ApiProblem } from "../../api/client";

export function NotFound({ what = "page" }: { what?: string }) {
  return (
    <Stack align="center" mt="xl" role="alert">
      <Title order={2}>Not found</Title>
      <Text c="dimmed">This {what} does not exist, or you cannot see it.</Text>
    </Stack>
  );
}

export function ProblemAlert({ error }: { error: unknown }) {
  if (!error) return null;
  const p = error instanceof ApiProblem ? error : null;
  return (
    <Alert color="red" title={p ? p.title : "Something went wrong"} role="alert">
      {p ? p.detail || `HTTP ${p.status}` : String(error)}
      {p?.status === 412 && <Text size="sm">Someone else changed this object: reload the page and try again.</Text>}
    </Alert>
  );
}

export function QueryView<T>({ query, what, children }: {
  query: UseQueryResult<T>;
  what?: string;
  children: (data: T) => ReactNode;
}) {
  if (query.isPending) return <Center p="xl"><Loader aria-label="Loading" /></Center>;
  if (query.isError) {
    if (query.error instanceof ApiProblem && query.error.status === 404) return <NotFound what={what} />;
    return <ProblemAlert error={query.error} />;
  }
  return <>{children(query.data)}</>;
}
