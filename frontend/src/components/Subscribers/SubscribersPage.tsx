// Subscribers: server-side paged, sorted, searched and filtered by tenant (the browser holds one
// page, however many rows exist); tenants and slices by name with links; add, edit, delete, and
// delete everything the current filter selects (confirming the count and the filter in words).
import { Anchor, Button, Group, Select, Text, TextInput } from "@mantine/core";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router";
import { api, unwrap, type Schemas } from "../../api/client";
import { useConfirm } from "../common/Confirm";
import { DataTable, RowActions, RowButton, type Column } from "../common/DataTable";
import { useFormDialog } from "../common/Dialog";
import { PageTitle, Section } from "../common/PageTitle";
import { Time } from "../common/time";
import { queryOf, tablePaging, useDebouncedField, usePageParams, useUrlFilters } from "../common/usePaged";
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
  const [url, setFilter] = useUrlFilters();
  const tenantFilter = /^\d+$/.test(url.get("tenant_id") ?? "") ? Number(url.get("tenant_id")) : null;
  const search = useDebouncedField(params.q, (q) => setParams({ q, page: 1 }));
  const query = { ...queryOf(params), ...(tenantFilter ? { tenant_id: tenantFilter } : {}) };
  const subs = useQuery({
    queryKey: ["subscribers", query],
    queryFn: () => unwrap(api.GET("/api/v1/subscribers", { params: { query } })),
    placeholderData: keepPreviousData,
  });
  const { tenants, tenantName, sliceName } = useNames();
  const editor = useFormDialog<Subscriber>(
    (s) => (s ? "Edit subscriber" : "New subscriber"),
    (s, done) => <SubscriberForm subscriber={s} onDone={done} />,
  );
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
      narrow: true,
      cell: (s) => (
        <RowActions>
          <RowButton label={`Edit subscriber ${s.imsi}`} onClick={() => editor.open(s)}>
            Edit
          </RowButton>
          <RowButton label={`Delete subscriber ${s.imsi}`} danger onClick={() => askDelete(s)}>
            Delete
          </RowButton>
        </RowActions>
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
            <Button onClick={() => editor.open("new")}>Add subscriber</Button>
          </Group>
        }>
        Subscribers
      </PageTitle>
      <Section title="Import CSV" mb="md">
        <ImportCsv />
      </Section>
      <Group align="end" mb="sm" wrap="wrap">
        <TextInput label="Search subscribers (IMSI or address)" w={360} maw="100%" {...search} />
        <Select
          label="Tenant"
          placeholder="All tenants"
          clearable
          w={220}
          maw="100%"
          data={tenants.map((t) => ({ value: String(t.id), label: t.name }))}
          value={tenantFilter ? String(tenantFilter) : null}
          onChange={(v) => setFilter("tenant_id", v)}
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
        alignTop
        label="Subscribers"
        columns={columns}
        rowKey={(s) => s.id}
        query={subs}
        {...tablePaging(params, setParams)}
        minWidth={880}
        empty={
          params.q || tenantFilter
            ? "No subscribers match this search and filter."
            : "No subscribers yet: add one or import a CSV."
        }
      />
      {editor.dialog}
      {confirm.dialog}
    </>
  );
}
