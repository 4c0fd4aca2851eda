// The audit log as a timeline: who did what to which object (named, linked), what changed
// (field: before → after), filtered by object type, person and free text; filters live in the URL.
import { Anchor, Badge, Code, Group, Select, Table, Text, TextInput } from "@mantine/core";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, unwrap } from "../../api/client";
import { DataTable } from "../common/DataTable";
import { labelOf } from "../common/fieldErrors";
import { PageTitle } from "../common/PageTitle";
import { Time } from "../common/time";
import { queryOf, tablePaging, useDebouncedField, usePageParams, useUrlFilters } from "../common/usePaged";
import { useBackends } from "../Slices/queries";
import {
  fieldDiff,
  knownKey,
  OBJECT_TYPES,
  objectLink,
  objectName,
  SELF_ACTIONS,
  typeLabel,
  verb,
  type AuditEntry,
  type KnownNames,
} from "./auditEntry";

/** A changed value: a plain one inline, a structured one (object, list) as indented JSON. */
function Value({ text, struck }: { text: string; struck: boolean }) {
  if (text.includes("\n")) {
    // scrollable, so reachable by keyboard too (tabIndex), with a name for screen readers
    return (
      <Code
        block
        fz="xs"
        td={struck ? "line-through" : undefined}
        mah={240}
        style={{ overflow: "auto" }}
        tabIndex={0}
        role="region"
        aria-label={struck ? "value before (JSON)" : "value after (JSON)"}>
        {text}
      </Code>
    );
  }
  return (
    <Text span size="sm" td={struck ? "line-through" : undefined} style={{ wordBreak: "break-all" }}>
      {text}
    </Text>
  );
}

function Sentence({ e, known }: { e: AuditEntry; known: KnownNames }) {
  const link = objectLink(e, known);
  const name = objectName(e, known);
  return (
    <Text size="sm" component="div">
      <b>{e.actor}</b> {verb(e.action)}
      {!SELF_ACTIONS.has(e.action) && (
        <>
          {" "}
          {typeLabel(e.object_type)}{" "}
          {link ? (
            <Anchor component={Link} to={link} fw={600} fz="sm">
              {name}
            </Anchor>
          ) : (
            <b>{name}</b>
          )}
        </>
      )}{" "}
      <Badge variant="light" color="gray" size="sm" title="How the change was made">
        {e.via}
      </Badge>
    </Text>
  );
}

function Changes({ e, known }: { e: AuditEntry; known: KnownNames }) {
  const changes = fieldDiff(e.before, e.after);
  if (changes.length === 0)
    return (
      <Text size="sm" c="dimmed">
        —
      </Text>
    );
  return (
    <Table fz="sm" withRowBorders={false} aria-label={`Changes to ${objectName(e, known)}`}>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Field</Table.Th>
          <Table.Th>Before</Table.Th>
          <Table.Th>After</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {changes.slice(0, 20).map((c) => (
          <Table.Tr key={c.field}>
            <Table.Td>{labelOf(c.field)}</Table.Td>
            <Table.Td>
              <Value text={c.before} struck={e.before != null} />
            </Table.Td>
            <Table.Td>
              <Value text={c.after} struck={false} />
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

export function AuditPage() {
  const [params, setParams] = usePageParams({ sort: "-ts" });
  const [url, setFilter] = useUrlFilters();
  const objectType = url.get("object_type") ?? "";
  const actor = url.get("actor") ?? "";
  const search = useDebouncedField(params.q, (q) => setParams({ q, page: 1 }));
  const actorText = useDebouncedField(actor, (text) => {
    if (text.trim() !== actor) setFilter("actor", text.trim());
  });

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
        <Select
          label="Object type"
          placeholder="All types"
          clearable
          w={200}
          maw="100%"
          data={Object.entries(OBJECT_TYPES).map(([value, label]) => ({ value, label }))}
          value={objectType || null}
          onChange={(v) => setFilter("object_type", v ?? "")}
        />
        <TextInput label="Who (username)" w={200} maw="100%" {...actorText} />
        <TextInput label="Search the audit log" w={260} maw="100%" {...search} />
      </Group>
      <DataTable
        alignTop
        label="Audit log"
        query={audit}
        {...tablePaging(params, setParams)}
        rowKey={(e) => e.id}
        minWidth={760}
        rowProps={() => ({ "data-testid": "audit-entry" })}
        empty={params.q || objectType || actor ? "No entries match these filters." : "Nothing has been logged yet."}
        columns={[
          {
            key: "ts",
            header: "When",
            sortable: true,
            cell: (e) => (
              <Text size="sm" style={{ whiteSpace: "nowrap" }}>
                <Time value={e.ts} />
              </Text>
            ),
          },
          { key: "actor", header: "What happened", sortable: true, cell: (e) => <Sentence e={e} known={known} /> },
          { key: "changes", header: "Changes", cell: (e) => <Changes e={e} known={known} /> },
        ]}
      />
    </>
  );
}
