// Loading / not-found / error states of a query, so pages only render the happy path.
import type { ReactNode } from "react";
import { Alert, Center, List, Loader, Stack, Text, Title } from "@mantine/core";
import type { UseQueryResult } from "@tanstack/react-query";
import { ApiProblem } from "../../api/client";
import { errorText } from "./errorText";
import { mapProblem, problemSummary } from "./fieldErrors";

export function NotFound({ what = "page" }: { what?: string }) {
  return (
    <Stack align="center" mt="xl" role="alert">
      <Title order={1} size="h2">
        Not found
      </Title>
      <Text c="dimmed">This {what} does not exist, or you cannot see it.</Text>
    </Stack>
  );
}

/**
 * A failed request in words: errors of fields the form shows next to its inputs are only counted
 * here, the others are listed with human paths; raw database text is never shown.
 */
export function ProblemAlert({ error, shownOnFields = [] }: { error: unknown; shownOnFields?: readonly string[] }) {
  if (!error) return null;
  const p = error instanceof ApiProblem ? error : null;
  if (!p) {
    const { title, message } = errorText(error);
    return (
      <Alert color="red" title={title} role="alert">
        {message}
      </Alert>
    );
  }
  const { byField, other } = mapProblem(p, shownOnFields);
  const onFields = Object.keys(byField).length;
  return (
    <Alert color="red" title={p.title} role="alert">
      {onFields > 0 && <Text size="sm">Correct the highlighted {onFields === 1 ? "field" : "fields"} below.</Text>}
      {other.length > 0 ? (
        <List size="sm">
          {other.map((m, i) => (
            <List.Item key={i}>{m}</List.Item>
          ))}
        </List>
      ) : (
        onFields === 0 && <Text size="sm">{problemSummary(p)}</Text>
      )}
      {p.status === 412 && <Text size="sm">Someone else changed this object: reload the page and try again.</Text>}
    </Alert>
  );
}

export function QueryView<T>({
  query,
  what,
  children,
}: {
  query: UseQueryResult<T>;
  what?: string;
  children: (data: T) => ReactNode;
}) {
  if (query.isPending)
    return (
      <Center p="xl">
        <Loader role="status" aria-label="Loading" />
      </Center>
    );
  if (query.isError) {
    if (query.error instanceof ApiProblem && query.error.status === 404) return <NotFound what={what} />;
    return <ProblemAlert error={query.error} />;
  }
  return <>{children(query.data)}</>;
}
