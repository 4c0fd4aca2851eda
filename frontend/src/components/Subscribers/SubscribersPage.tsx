// Subscribers: server-side paged, sorted, searched and filtered by tenant (the browser holds one
// page, however many rows exist); tenants and slices by name with links; add, edit, delete, and
// delete everything the current filter selects (confirming the count and the filter in words).
import { Anchor, Button, Group, Paper, Select, Table, TextInput, Title, UnstyledButton, VisuallyHidden } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { api, unwrap, type Schemas } from "../../api/client";
import { useConfirm } from "../common/Confirm";
import { Dialog } from "../common/Dialog";
import { PageTitle } from "../common/PageTitle";
import { Pager } from "../common/Pager";
import { QueryView } from "../common/QueryView";
import { Time } from "../common/time";
import { queryOf, usePageParams } from "../common/usePaged";
import { download, fetchAll, toCsv } from "./exportCsv";
import { ImportCsv } from "./ImportCsv";
import { useNames } from "./lookups";
import { mbitText, SubscriberForm } from "./SubscriberForm";

type Subscriber = Schemas["SubscriberPublic"];

/** The list's filter in words, for the bulk-delete confirmation. */
export function filterWords(q: string, tenant: string | null): string {
  const parts = [tenant ? `of tenant ${tenant}` : "of every tenant"];
  if (q) parts.push(`whose IMSI or UE address contains “${q}”`);
  return parts.join(" ");
}

const COLUMNS = [
  { key: "imsi", label: "IMSI" },
  { key: "ue_ip", label: "UE address" },
  { key: "tenant_id", label: "Tenant" },
  { key: "created_at", label: "Created" },
];

export function SubscribersPage() {
  const qc = useQueryClient();
  const [params, setParams] = usePageParams({ sort: "imsi" });
  const [url, setUrl] = useSearchParams();
  const tenantFilter = /^\d+$/.test(url.get("tenant_id") ?? "") ? Number(url.get("tenant_id")) : null;
  const [search, setSearch] = useState(params.q);
  const [debounced] = useDebouncedValue(search, 250);
  useEffect(() => {
    if (debounced !== params.q) setParams({ q: debounced, page: 1 });
  }, [debounced]); // eslint-disable-line react-hooks/exhaustive-deps
  const query = { ...queryOf(params), ...(tenantFilter ? { tenant_id: tenantFilter } : {}) };
  const subs = useQuery({
    queryKey: ["subscribers", query],
    queryFn: () => unwrap(api.GET("/api/v1/subscribers", { params: { query } })),
    placeholderData: keepPreviousData,
  });
  const { tenants, tenantName, sliceName } = useNames();
  const [editing, setEditing] = useState<Subscriber | "new" | null>(null);
  const [exporting, setExporting] = useState<string | null>(null);
  async function exportCsv() {
    setExporting("0 %");
    try {
      const rows = await fetchAll(
        { sort: params.sort, ...(params.q ? { q: params.q } : {}), ...(tenantFilter ? { tenant_id: tenantFilter } : {}) },
        (done, total) => setExporting(`${Math.round((100 * done) / Math.max(1, total))} %`));
      const who = tenantFilter ? tenantName.get(tenantFilter) ?? `tenant-${tenantFilter}` : "all";
      download(`subscribers-${who}.csv`, toCsv(rows, tenantName, sliceName));
    } finally {
      setExporting(null);
    }
  }
  const confirm = useConfirm();
  const sortBy = (key: string) => setParams({ sort: params.sort === key ? `-${key}` : key, page: 1 });
  const ariaSort = (key: string) => (params.sort === key ? "ascending" : params.sort === `-${key}` ? "descending" : "none");
  const setTenantFilter = (v: string | null) => {
    const next = new URLSearchParams(url);
    if (v) next.set("tenant_id", v); else next.delete("tenant_id");
    next.delete("page");
    setUrl(next, { replace: true });
  };
  const matching = subs.data?.count ?? 0;
  const askBulkDelete = () => {
    const tenant = tenantFilter ? tenantName.get(tenantFilter) ?? `tenant ${tenantFilter}` : null;
    const everything = !params.q && !tenantFilter;
    const noun = matching === 1 ? "subscriber" : "subscribers";
    confirm.ask({
      title: `Delete ${matching} ${noun}?`,
      message: `All ${matching} ${noun} ${filterWords(params.q, tenant)} are removed`
        + (everything ? " — no filter is set: this empties the whole list" : "")
        + "; their traffic stops matching their slices after the next deploy. This cannot be undone.",
      confirmLabel: `Delete ${matching} ${noun}`,
      action: async () => {
        await unwrap(api.POST("/api/v1/subscribers/bulk-delete", { body: {
          ...(params.q ? { q: params.q } : {}), ...(tenantFilter ? { tenant_id: tenantFilter } : {}),
          all: everything, expected_count: matching,
        } }));
        setParams({ page: 1 });
        await qc.invalidateQueries({ queryKey: ["subscribers"] });
      },
    });
  };
  const askDelete = (s: Subscriber) => confirm.ask({
    title: `Delete subscriber ${s.imsi}?`,
    message: `Subscriber ${s.imsi} (${s.ue_ip}) of tenant ${tenantName.get(s.tenant_id) ?? s.tenant_id} is removed; `
      + "its traffic stops matching its slices after the next deploy.",
    confirmLabel: "Delete subscriber",
    action: async () => {
      await unwrap(api.DELETE("/api/v1/subscribers/{subscriber_id}", { params: { path: { subscriber_id: s.id } } }));
      await qc.invalidateQueries({ queryKey: ["subscribers"] });
    },
  });

  return (
    <>
      <PageTitle actions={
        <Group gap="xs">
          <Button variant="default" onClick={() => void exportCsv()} disabled={exporting !== null}
            title="The subscribers the search and tenant filter select, in the import's CSV format">
            {exporting ? `Exporting … ${exporting}` : "Export CSV"}
          </Button>
          <Button onClick={() => setEditing("new")}>Add subscriber</Button>
        </Group>
      }>Subscribers</PageTitle>
      <Paper withBorder p="md" mb="md">
        <Title order={2} size="h4" mb="sm">Import CSV</Title>
        <ImportCsv />
      </Paper>
      <Group align="end" mb="sm" wrap="wrap">
        <TextInput label="Search subscribers (IMSI or address)" w={360} maw="100%" value={search}
          onChange={(e) => setSearch(e.currentTarget.value)} />
        <Select label="Tenant" placeholder="All tenants" clearable w={220} maw="100%"
          data={tenants.map((t) => ({ value: String(t.id), label: t.name }))}
          value={tenantFilter ? String(tenantFilter) : null} onChange={setTenantFilter} />
        <Button variant="light" color="red" disabled={matching === 0 || subs.isPlaceholderData} onClick={askBulkDelete}
          title="Delete every subscriber the search and tenant filter select (all pages)">
          Delete {matching} matching
        </Button>
      </Group>
      <QueryView query={subs}>
        {(page) => (
          <>
            <Table.ScrollContainer minWidth={880}>
              <Table striped aria-label="Subscribers" style={{ opacity: subs.isPlaceholderData ? 0.6 : 1 }}>
                <Table.Thead>
                  <Table.Tr>
                    {COLUMNS.map((c) => (
                      <Table.Th key={c.key} aria-sort={ariaSort(c.key)}>
                        <UnstyledButton onClick={() => sortBy(c.key)} fw={600}>
                          {c.label} {params.sort === c.key ? "▲" : params.sort === `-${c.key}` ? "▼" : ""}
                        </UnstyledButton>
                      </Table.Th>
                    ))}
                    <Table.Th>TEIDs</Table.Th><Table.Th>Slices</Table.Th><Table.Th>Guaranteed rate</Table.Th>
                    <Table.Th><VisuallyHidden>Actions</VisuallyHidden></Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {page.data.map((s) => (
                    <Table.Tr key={s.id}>
                      <Table.Td ff="monospace">{s.imsi}</Table.Td><Table.Td>{s.ue_ip}</Table.Td>
                      <Table.Td>
                        <Anchor component={Link} to={`/subscribers?tenant_id=${s.tenant_id}`}
                          title="Show this tenant's subscribers">{tenantName.get(s.tenant_id) ?? `tenant ${s.tenant_id}`}</Anchor>
                      </Table.Td>
                      <Table.Td><Time value={s.created_at} /></Table.Td>
                      <Table.Td>{s.teids.join(", ")}</Table.Td>
                      <Table.Td>
                        <Group gap={6}>
                          {s.slice_ids.map((id) => (
                            <Anchor key={id} component={Link} to={`/slices/${id}`}>{sliceName.get(id) ?? `slice ${id}`}</Anchor>
                          ))}
                        </Group>
                      </Table.Td>
                      <Table.Td>{s.guaranteed_bps != null ? mbitText(s.guaranteed_bps) : "—"}</Table.Td>
                      <Table.Td>
                        <Group gap={4} wrap="nowrap">
                          <Button size="compact-xs" variant="subtle" onClick={() => setEditing(s)} aria-label={`Edit subscriber ${s.imsi}`}>Edit</Button>
                          <Button size="compact-xs" variant="subtle" color="red" onClick={() => askDelete(s)}
                            aria-label={`Delete subscriber ${s.imsi}`}>Delete</Button>
                        </Group>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager count={page.count} params={params} onPage={(p) => setParams({ page: p })} />
          </>
        )}
      </QueryView>
      <Dialog opened={editing !== null} onClose={() => setEditing(null)}
        title={editing === "new" ? "New subscriber" : "Edit subscriber"}>
        {editing !== null && <SubscriberForm subscriber={editing === "new" ? undefined : editing} onDone={() => setEditing(null)} />}
      </Dialog>
      {confirm.dialog}
    </>
  );
}
