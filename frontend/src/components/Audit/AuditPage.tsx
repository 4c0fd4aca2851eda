// The audit log as a timeline: who did what to which object (named, linked), what changed
// (field: before → after), filtered by object type, person and free text; filters live in the URL.
import { Anchor, Badge, Group, Paper, Select, Stack, Table, Text, TextInput } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { api, unwrap } from "../../api/client";
import { labelOf } from "../common/fieldErrors";
import { PageTitle } from "../common/PageTitle";
import { Pager } from "../common/Pager";
import { QueryView } from "../common/QueryView";
import { Time } from "../common/time";
import { queryOf, usePageParams } from "../common/usePaged";
import { useBackends } from "../Slices/queries";
import {
  fieldDiff, knownKey, OBJECT_TYPES, objectLink, objectName, SELF_ACTIONS, typeLabel, verb, type AuditEntry, type KnownNames,
} from "./auditEntry";

function Entry({ e, known }: { e: AuditEntry; known: KnownNames }) {
  const changes = fieldDiff(e.before, e.after);
  const link = objectLink(e, known);
  const name = objectName(e, known);
  const self = SELF_ACTIONS.has(e.action);
  return (
    <Paper withBorder p="sm" component="li" data-testid="audit-entry">
      <Group justify="space-between" gap="xs" wrap="wrap">
        <Text>
          <b>{e.actor}</b> {verb(e.action)}
          {!self && <> {typeLabel(e.object_type)}{" "}
            {link ? <Anchor component={Link} to={link} fw={600}>{name}</Anchor> : <b>{name}</b>}</>}
        </Text>
        <Group gap="xs">
          <Badge variant="light" color="gray" title="How the change was made">{e.via}</Badge>
          <Text size="sm" c="dimmed"><Time value={e.ts} /></Text>
        </Group>
      </Group>
      {changes.length > 0 && (
        <Table.ScrollContainer minWidth={300} mt={6}>
          <Table fz="sm" withRowBorders={false} aria-label={`Changes to ${name}`}>
            <Table.Thead><Table.Tr><Table.Th>Field</Table.Th><Table.Th>Before</Table.Th><Table.Th>After</Table.Th></Table.Tr></Table.Thead>
            <Table.Tbody>
              {changes.slice(0, 20).map((c) => (
                <Table.Tr key={c.field}>
                  <Table.Td>{labelOf(c.field)}</Table.Td>
                  <Table.Td><Text span size="sm" td={e.before ? "line-through" : undefined} style={{ wordBreak: "break-all" }}>{c.before}</Text></Table.Td>
                  <Table.Td><Text span size="sm" style={{ wordBreak: "break-all" }}>{c.after}</Text></Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Paper>
  );
}

export function AuditPage() {
  const [params, setParams] = usePageParams({ sort: "-ts" });
  const [url, setUrl] = useSearchParams();
  const objectType = url.get("object_type") ?? "";
  const actor = url.get("actor") ?? "";
  const [search, setSearch] = useState(params.q);
  const [actorText, setActorText] = useState(actor);
  const [debounced] = useDebouncedValue(search, 250);
  const [debouncedActor] = useDebouncedValue(actorText, 250);
  const setFilter = (key: string, value: string) => {
    const next = new URLSearchParams(url);
    if (value) next.set(key, value); else next.delete(key);
    next.delete("page");
    setUrl(next, { replace: true });
  };
  useEffect(() => {
    if (debounced !== params.q) setParams({ q: debounced, page: 1 });
  }, [debounced]); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => {
    if (debouncedActor.trim() !== actor) setFilter("actor", debouncedActor.trim());
  }, [debouncedActor]); // eslint-disable-line react-hooks/exhaustive-deps

  const query = { ...queryOf(params), ...(objectType ? { object_type: objectType } : {}), ...(actor ? { actor } : {}) };
  const audit = useQuery({
    queryKey: ["audit", query],
    queryFn: () => unwrap(api.GET("/api/v1/audit", { params: { query } })),
    placeholderData: keepPreviousData,
  });
  // deploy / rollback / reconcile entries name their backend by id only
  const backends = useBackends();
  const known: KnownNames = new Map((backends.data?.data ?? []).map((b) => [knownKey("backend", b.id), b.name]));
  return (
    <>
      <PageTitle>Audit log</PageTitle>
      <Group align="end" mb="sm" wrap="wrap">
        <Select label="Object type" placeholder="All types" clearable w={200} maw="100%"
          data={Object.entries(OBJECT_TYPES).map(([value, label]) => ({ value, label }))}
          value={objectType || null} onChange={(v) => setFilter("object_type", v ?? "")} />
        <TextInput label="Who (username)" w={200} maw="100%" value={actorText} onChange={(e) => setActorText(e.currentTarget.value)} />
        <TextInput label="Search the audit log" w={260} maw="100%" value={search} onChange={(e) => setSearch(e.currentTarget.value)} />
      </Group>
      <QueryView query={audit}>
        {(page) => (
          <>
            {page.data.length === 0 && <Text c="dimmed">No entries match these filters.</Text>}
            <Stack component="ol" gap="xs" p={0} m={0} style={{ listStyle: "none", opacity: audit.isPlaceholderData ? 0.6 : 1 }}
              aria-label="Audit log">
              {page.data.map((e) => <Entry key={e.id} e={e} known={known} />)}
            </Stack>
            <Pager count={page.count} params={params} onPage={(p) => setParams({ page: p })} />
          </>
        )}
      </QueryView>
    </>
  );
}
