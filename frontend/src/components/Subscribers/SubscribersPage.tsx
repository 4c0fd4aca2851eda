// Subscribers: server-side paged, sorted, searched and filtered by tenant (the browser holds one
// page, however many rows exist); tenants and slices by name with links; add, edit, delete, and
// delete everything the current filter selects (confirming the count and the filter in words).
import { Anchor, Button, Group, Paper, Select, Text, TextInput, Title } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { api, unwrap, type Schemas } from "../../api/client";
import { useConfirm } from "../common/Confirm";
import { DataTable, type Column } from "../common/DataTable";
import { Dialog } from "../common/Dialog";
import { PageTitle } from "../common/PageTitle";
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
        {
          sort: params.sort,
          ...(params.q ? { q: params.q } : {}),
          ...(tenantFilter ? { tenant_id: tenantFilter } : {}),
        },
        (done, total) => setExporting(`${Math.round((100 * done) / Math.max(1, total))} %`),
      );
      const who = tenantFilter ? (tenantName.get(tenantFilter) ?? `tenant-${tenantFilter}`) : "all";
      download(`subscribers-${who}.csv`, toCsv(rows, tenantName, sliceName));
    } finally {
      setExporting(null);
    }
  }
  const confirm = useConfirm();
  const setTenantFilter = (v: string | null) => {
    const next = new URLSearchParams(url);
    if (v) next.set("tenant_id", v);
    else next.delete("tenant_id");
    next.delete("page");
    setUrl(next, { replace: true });
  };
  const matching = subs.data?.count ?? 0;
  const askBulkDelete = () => {
    const tenant = tenantFilter ? (tenantName.get(tenantFilter) ?? `tenant ${tenantFilter}`) : null;
    const everything = !params.q && !tenantFilter;
    const noun = matching === 1 ? "subscriber" : "subscribers";
    confirm.ask({
      title: `Delete ${matching} ${noun}?`,
      message:
        `All ${matching} ${noun} ${filterWords(params.q, tenant)} are removed`
        + (everything ? " — no filter is set: this empties the whole list" : "")
        + "; their traffic stops matching their slices after the next deploy. This cannot be undone.",
      confirmLabel: `Delete ${matching} ${noun}`,
      action: async () => {
        await unwrap(
          api.POST("/api/v1/subscribers/bulk-delete", {
            body: {
              ...(params.q ? { q: params.q } : {}),
              ...(tenantFilter ? { tenant_id: tenantFilter } : {}),
              all: everything,
              expected_count: matching,
            },
          }),
        );
        setParams({ page: 1 });
        await qc.invalidateQueries({ queryKey: ["subscribers"] });
      },
    });
  };
  const askDelete = (s: Subscriber) =>
    confirm.ask({
      title: `Delete subscriber ${s.imsi}?`,
      message:
        `Subscriber ${s.imsi} (${s.ue_ip}) of tenant ${tenantName.get(s.tenant_id) ?? s.tenant_id} is removed; `
        + "its traffic stops matching its slices after the next deploy.",
      confirmLabel: "Delete subscriber",
      action: async () => {
        await unwrap(api.DELETE("/api/v1/subscribers/{subscriber_id}", { params: { path: { subscriber_id: s.id } } }));
        await qc.invalidateQueries({ queryKey: ["subscribers"] });
      },
    });

  const columns: Column<Subscriber>[] = [
    {
      key: "imsi",
      header: "IMSI",
      sortable: true,
      cell: (s) => (
        <Text span ff="monospace" fz="sm">
          {s.imsi}
        </Text>
      ),
    },
    { key: "ue_ip", header: "UE address", sortable: true, cell: (s) => s.ue_ip },
    {
      key: "tenant_id",
      header: "Tenant",
      sortable: true,
      cell: (s) => (
        <Anchor component={Link} to={`/subscribers?tenant_id=${s.tenant_id}`} title="Show this tenant's subscribers">
          {tenantName.get(s.tenant_id) ?? `tenant ${s.tenant_id}`}
        </Anchor>
      ),
    },
    { key: "created_at", header: "Created", sortable: true, cell: (s) => <Time value={s.created_at} /> },
    { key: "teids", header: "TEIDs", cell: (s) => s.teids.join(", ") },
    {
      key: "slices",
      header: "Slices",
      cell: (s) => (
        <Group gap={6}>
          {s.slice_ids.map((id) => (
            <Anchor key={id} component={Link} to={`/slices/${id}`}>
              {sliceName.get(id) ?? `slice ${id}`}
            </Anchor>
          ))}
        </Group>
      ),
    },
    {
      key: "guaranteed_bps",
      header: "Guaranteed rate",
      cell: (s) => (s.guaranteed_bps != null ? mbitText(s.guaranteed_bps) : "—"),
    },
    {
      key: "actions",
      header: "Actions",
      hiddenHeader: true,
      cell: (s) => (
        <Group gap={4} wrap="nowrap">
          <Button
            size="compact-xs"
            variant="subtle"
            onClick={() => setEditing(s)}
            aria-label={`Edit subscriber ${s.imsi}`}>
            Edit
          </Button>
          <Button
            size="compact-xs"
            variant="subtle"
            color="red"
            onClick={() => askDelete(s)}
            aria-label={`Delete subscriber ${s.imsi}`}>
            Delete
          </Button>
        </Group>
      ),
    },
  ];

  return (
    <>
      <PageTitle
        actions={
          <Group gap="xs">
            <Button
              variant="default"
              onClick={() => void exportCsv()}
              disabled={exporting !== null}
              title="The subscribers the search and tenant filter select, in the import's CSV format">
              {exporting ? `Exporting … ${exporting}` : "Export CSV"}
            </Button>
            <Button onClick={() => setEditing("new")}>Add subscriber</Button>
          </Group>
        }>
        Subscribers
      </PageTitle>
      <Paper withBorder p="md" mb="md">
        <Title order={2} size="h4" mb="sm">
          Import CSV
        </Title>
        <ImportCsv />
      </Paper>
      <Group align="end" mb="sm" wrap="wrap">
        <TextInput
          label="Search subscribers (IMSI or address)"
          w={360}
          maw="100%"
          value={search}
          onChange={(e) => setSearch(e.currentTarget.value)}
        />
        <Select
          label="Tenant"
          placeholder="All tenants"
          clearable
          w={220}
          maw="100%"
          data={tenants.map((t) => ({ value: String(t.id), label: t.name }))}
          value={tenantFilter ? String(tenantFilter) : null}
          onChange={setTenantFilter}
        />
        <Button
          variant="light"
          color="red"
          disabled={matching === 0 || subs.isPlaceholderData}
          onClick={askBulkDelete}
          title="Delete every subscriber the search and tenant filter select (all pages)">
          Delete {matching} matching
        </Button>
      </Group>
      <DataTable
        label="Subscribers"
        columns={columns}
        rowKey={(s) => s.id}
        query={subs}
        params={params}
        onPage={(p) => setParams({ page: p })}
        onSort={(sort) => setParams({ sort, page: 1 })}
        minWidth={880}
        empty={
          params.q || tenantFilter
            ? "No subscribers match this search and filter."
            : "No subscribers yet: add one or import a CSV."
        }
      />
      <Dialog
        opened={editing !== null}
        onClose={() => setEditing(null)}
        title={editing === "new" ? "New subscriber" : "Edit subscriber"}>
        {editing !== null && (
          <SubscriberForm subscriber={editing === "new" ? undefined : editing} onDone={() => setEditing(null)} />
        )}
      </Dialog>
      {confirm.dialog}
    </>
  );
}
